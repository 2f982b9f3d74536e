"""Project members managed by their owners (palace/membership.py): every change is an op row, a project always keeps
an owner, a non-owner is refused and an outsider cannot tell the project exists."""

from __future__ import annotations

from typing import Any

import pytest

from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from palace.membership import (
    invitation_accept,
    member_invite,
    member_remove_by,
    member_role_change,
    ownership_transfer,
    project_create_for,
    project_leave,
)
from palace.models import Membership, OpLog, Palace
from palace.rls import acting_as


def _roles(palace: Palace) -> dict[str, str]:
    """Accepted members by name (an invitation waiting for an answer is no membership)."""
    rows = Membership.objects.filter(palace=palace, state=Membership.State.ACCEPTED)
    return dict(rows.values_list("user__username", "role"))


def test_create_normalises_the_origin_and_makes_the_actor_owner(alice: Any) -> None:
    with acting_as(alice):  # as the panel and REST run it: under the user's row-level security context
        palace = project_create_for(origin="git@GitHub.com:team/app.git", actor=Actor.for_user(alice))
    assert palace.origin_key == "github.com/team/app"
    assert _roles(palace) == {"alice": "owner"}
    assert OpLog.objects.filter(op="palace.create", palace=palace, actor_user=alice).exists()
    with pytest.raises(Conflict, match="already exists"):
        project_create_for(origin="https://github.com/team/app", actor=Actor.for_user(alice))
    with pytest.raises(InvalidInput):
        project_create_for(origin="not an origin", actor=Actor.for_user(alice))
    long_origin = "ssh://git.example.com/" + "/".join(["x" * 90] * 4)  # a key over the name column's 200 characters
    long = project_create_for(origin=long_origin, actor=Actor.for_user(alice))
    assert len(long.origin_key or "") > 200 and long.name == (long.origin_key or "")[:200]


def test_owner_invites_changes_removes_each_with_an_op_row(project: Palace, alice: Any, charlie: Any) -> None:
    owner = Actor.for_user(alice)
    with acting_as(alice):
        member_invite(palace_id=project.pk, username="charlie", role="viewer", actor=owner)
    with acting_as(charlie):  # since issue 24 an invitation waits for the invitee's consent
        invitation_accept(palace_id=project.pk, actor=Actor.for_user(charlie))
    with acting_as(alice):
        member_role_change(palace_id=project.pk, username="charlie", role="editor", actor=owner)
        assert _roles(project)["charlie"] == "editor"
        member_remove_by(palace_id=project.pk, username="charlie", actor=owner)
    assert "charlie" not in _roles(project)
    ops = OpLog.objects.filter(palace=project, op__startswith="member.").exclude(op="member.invite")
    ops = list(ops.filter(target_id=charlie.pk).order_by("pk").values_list("op", "detail"))
    assert [(op, d["role"], d.get("previous")) for op, d in ops] == [
        ("member.accept", "viewer", None),
        ("member.set", "editor", "viewer"),
        ("member.remove", "editor", None),
    ]
    with pytest.raises(Conflict, match="already a member"):
        member_invite(palace_id=project.pk, username="bob", role="editor", actor=owner)
    # An unknown name gets the invitee's answer (no existence oracle) and stores nothing.
    assert member_invite(palace_id=project.pk, username="nobody", role="editor", actor=owner).state == "pending"
    assert not Membership.objects.filter(palace=project, user__username="nobody").exists()
    with pytest.raises(NotFound, match="not a member"):
        member_remove_by(palace_id=project.pk, username="charlie", actor=owner)


@pytest.mark.parametrize("role", ["editor", "viewer"])
def test_a_member_who_is_not_owner_is_refused_and_an_outsider_gets_not_found(
    project: Palace, alice: Any, bob: Any, charlie: Any, role: str
) -> None:
    Membership.objects.filter(palace=project, user=bob).update(role=role)
    before = OpLog.objects.count()
    with pytest.raises(PermissionDenied, match="only an owner"):
        member_invite(palace_id=project.pk, username="charlie", role="viewer", actor=Actor.for_user(bob))
    with pytest.raises(PermissionDenied):
        member_role_change(palace_id=project.pk, username="alice", role="viewer", actor=Actor.for_user(bob))
    with pytest.raises(PermissionDenied):
        ownership_transfer(palace_id=project.pk, username="bob", actor=Actor.for_user(bob))
    with pytest.raises(NotFound, match="palace not found"):
        member_invite(palace_id=project.pk, username="charlie", role="owner", actor=Actor.for_user(charlie))
    with pytest.raises(NotFound, match="palace not found"):
        member_invite(palace_id=999_999, username="charlie", role="owner", actor=Actor.for_user(alice))
    assert OpLog.objects.count() == before and _roles(project) == {"alice": "owner", "bob": role}
    # positive control: the owner may (charlie's invitation counts once he accepts)
    member_invite(palace_id=project.pk, username="charlie", role="viewer", actor=Actor.for_user(alice))
    invitation_accept(palace_id=project.pk, actor=Actor.for_user(charlie))
    assert _roles(project)["charlie"] == "viewer"


def test_the_last_owner_cannot_go_but_can_after_a_transfer(project: Palace, alice: Any, bob: Any) -> None:
    owner = Actor.for_user(alice)
    for attempt in (
        lambda: member_role_change(palace_id=project.pk, username="alice", role="editor", actor=owner),
        lambda: member_remove_by(palace_id=project.pk, username="alice", actor=owner),
        lambda: project_leave(palace_id=project.pk, actor=owner),
    ):
        with pytest.raises(Conflict, match="always keeps an owner"):
            attempt()
    assert _roles(project) == {"alice": "owner", "bob": "viewer"}
    with acting_as(alice):
        ownership_transfer(palace_id=project.pk, username="bob", actor=owner)
    assert _roles(project) == {"alice": "editor", "bob": "owner"}
    assert OpLog.objects.filter(op="member.transfer", palace=project, target_id=bob.pk, actor_user=alice).exists()
    with acting_as(alice):
        project_leave(palace_id=project.pk, actor=owner)  # an editor may leave
    assert _roles(project) == {"bob": "owner"}
    assert OpLog.objects.filter(op="member.leave", palace=project, target_id=alice.pk).exists()
    with pytest.raises(NotFound):
        project_leave(palace_id=project.pk, actor=owner)


def test_a_second_owner_may_be_demoted_and_a_personal_palace_has_no_members(
    project: Palace, alice: Any, bob: Any
) -> None:
    owner = Actor.for_user(alice)
    member_role_change(palace_id=project.pk, username="bob", role="owner", actor=owner)
    member_role_change(palace_id=project.pk, username="alice", role="viewer", actor=owner)
    assert _roles(project) == {"alice": "viewer", "bob": "owner"}
    personal = Palace.objects.get(personal_owner=alice)
    with pytest.raises(Conflict, match="personal palace"):
        member_invite(palace_id=personal.pk, username="bob", role="viewer", actor=owner)
