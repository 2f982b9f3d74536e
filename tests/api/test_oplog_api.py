"""REST /api/v1/oplog: only palaces you may read, your own account-level rows, filters and paging."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from memory.lifecycle import memory_forget
from memory.save import memory_save
from palace.actors import Actor
from palace.models import OpLog, Palace

URL = "/api/v1/oplog"


@pytest.fixture
def get_as(token_for: Callable[..., str]) -> Callable[..., tuple[int, Any]]:
    def get(user: Any, **params: Any) -> tuple[int, Any]:
        r = Client().get(URL, params, HTTP_AUTHORIZATION=f"Bearer {token_for(user, scope='read')}")
        return r.status_code, r.json()

    return get


@pytest.fixture
def history(project: Palace, alice: Any, charlie: Any) -> dict[str, int]:
    """A project memory saved and forgotten by alice, and a private memory of charlie."""
    saved = memory_save(
        palace=project, actor=Actor.for_user(alice), content="Releases are cut on Tuesdays.", kind="decision"
    )
    assert saved.memory is not None
    memory_forget(memory_id=saved.memory.pk, actor=Actor.for_user(alice), reason="continuous delivery now")
    private = memory_save(
        palace=Palace.objects.get(personal_owner=charlie),
        actor=Actor.for_user(charlie),
        content="Charlie's locker code is behind the poster.",
        kind="fact",
    )
    assert private.memory is not None
    return {"project_memory": saved.memory.pk, "charlie_memory": private.memory.pk}


def ops(body: Any) -> list[tuple[str, int | None]]:
    return [(row["op"], row["target_id"]) for row in body["items"] if row["op"].startswith("memory.")]


def test_members_see_project_rows_outsider_does_not(
    history: dict[str, int], project: Palace, alice: Any, bob: Any, charlie: Any, get_as: Any
) -> None:
    pid = history["project_memory"]
    expected = [("memory.forget", pid), ("memory.save", pid)]
    status, body = get_as(alice, palace=project.pk)
    assert status == 200 and ops(body) == expected
    assert ops(get_as(bob, palace=project.pk)[1]) == expected  # a viewer reads the ledger
    assert get_as(charlie, palace=project.pk)[0] == 404
    assert get_as(charlie, project="github.com/atrium-test/demo")[0] == 404
    assert ops(get_as(alice, project="https://github.com/atrium-test/demo.git")[1]) == expected
    # without a palace: every readable palace — charlie sees only his own memory rows
    assert ops(get_as(charlie)[1]) == [("memory.save", history["charlie_memory"])]
    assert ("memory.save", history["charlie_memory"]) not in ops(get_as(alice)[1])
    assert ops(get_as(alice)[1]) == expected


def test_account_level_rows_only_for_yourself(alice: Any, charlie: Any, get_as: Any) -> None:
    alice_status, alice_body = get_as(alice, op="token.create")
    charlie_status, charlie_body = get_as(charlie, op="token.create")
    assert alice_status == charlie_status == 200
    alice_rows, charlie_rows = alice_body["items"], charlie_body["items"]
    assert alice_rows and charlie_rows  # each sees the token they made
    assert {r["actor_name"] for r in alice_rows} == {"alice"}
    assert {r["actor_name"] for r in charlie_rows} == {"charlie"}


def test_filters_and_paging(history: dict[str, int], project: Palace, alice: Any, get_as: Any) -> None:
    assert [r["op"] for r in get_as(alice, palace=project.pk, op="memory.save")[1]["items"]] == ["memory.save"]
    prefix = get_as(alice, palace=project.pk, op="memory.")[1]["items"]
    assert [r["op"] for r in prefix] == ["memory.forget", "memory.save"]
    assert prefix[0]["reason"] == "continuous delivery now"
    future = (timezone.now() + timedelta(hours=1)).isoformat()
    assert get_as(alice, palace=project.pk, since=future)[1]["items"] == []
    everything = get_as(alice, palace=project.pk)[1]["items"]
    first = get_as(alice, palace=project.pk, limit=1)[1]
    assert len(first["items"]) == 1 and first["next_before"] == first["items"][0]["id"]
    second = get_as(alice, palace=project.pk, limit=1, before=first["next_before"])[1]
    assert [r["id"] for r in first["items"] + second["items"]] == [r["id"] for r in everything[:2]]
    for bad in ({"limit": 0}, {"limit": 1000}, {"since": "yesterday"}, {"palace": "x"}):
        assert get_as(alice, **bad)[0] == 422, bad
    assert get_as(alice, palace=project.pk, project="github.com/atrium-test/demo")[0] == 422


def test_oplog_rows_are_the_same_the_services_wrote(history: dict[str, int], project: Palace, alice: Any) -> None:
    assert OpLog.objects.filter(palace=project, op__startswith="memory.").count() == 2


def test_unauthenticated_is_401() -> None:
    assert Client().get(URL).status_code == 401
