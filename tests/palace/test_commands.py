from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from palace.models import Membership, OpLog, Palace


def test_createuser_makes_a_user_with_a_personal_palace(db: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("a-long-password\n"))
    call_command("createuser", "dora", "--email", "d@example.test", "--password-stdin", "--admin")
    from django.contrib.auth import get_user_model

    dora = get_user_model().objects.get(username="dora")
    assert dora.check_password("a-long-password")
    assert dora.is_superuser
    assert Palace.objects.get(personal_owner=dora).kind == "personal"
    assert OpLog.objects.filter(op="user.create", target_id=dora.pk).exists()
    with pytest.raises(CommandError, match="already exists"):
        call_command("createuser", "dora")


def test_project_create_with_members_and_add_member(alice: Any, bob: Any, charlie: Any) -> None:
    call_command("project", "create", "git@github.com:team/app.git", "--owner", "alice", "--member", "bob:viewer")
    palace = Palace.objects.get(origin_key="github.com/team/app")
    assert dict(Membership.objects.filter(palace=palace).values_list("user__username", "role")) == {
        "alice": "owner",
        "bob": "viewer",
    }
    call_command("project", "add-member", "https://github.com/team/app", "charlie:editor", "bob:editor")
    assert Membership.objects.get(palace=palace, user=charlie).role == "editor"
    assert Membership.objects.get(palace=palace, user=bob).role == "editor"
    with pytest.raises(CommandError, match="already exists"):
        call_command("project", "create", "https://github.com/team/app", "--owner", "alice")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["project", "create", "not a url", "--owner", "alice"], "git origin"),
        (["project", "create", "https://github.com/a/b", "--owner", "nobody"], "no user"),
        (["project", "create", "https://github.com/a/b", "--owner", "alice", "--member", "bob:king"], "ROLE"),
    ],
)
def test_project_command_bad_input_is_a_clear_error(alice: Any, bob: Any, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command(*args)
    assert not Palace.objects.filter(kind="project").exists()
