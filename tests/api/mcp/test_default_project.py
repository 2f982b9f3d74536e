"""A token's default project at the MCP door: every tool that addresses one palace and is given no `project` works
in the token's default project (api/mcp/runner.py, ToolCall.palace); an explicit `project` wins ("personal" names
the personal palace); a token without one works in the personal palace; and a default project its user no longer
belongs to is a clear error, never a write somewhere else."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.tokens import token_create
from memory.models import HandoffVersion, Memory
from palace.actors import Actor
from palace.models import OpLog, Palace
from palace.services import member_remove, member_set, project_create
from tests.api.mcp.conftest import call_each, run, text_of
from tests.conftest import PROJECT_ORIGIN

OTHER_ORIGIN = "https://github.com/atrium-test/other"


def _saved_id(result: Any) -> int:
    assert not result.is_error, text_of(result)
    return int(result.structured_content["items"][0]["id"])


def _project_token(user: Any) -> str:
    _, raw = token_create(user=user, label="app agent", project=PROJECT_ORIGIN, actor=Actor.for_user(user))
    return raw


@pytest.fixture
def other(alice: Any, system: Actor, mcp_db: None) -> Palace:
    return project_create(origin=OTHER_ORIGIN, owner=alice, actor=system)


def test_a_token_with_a_default_project_works_there_unless_told_otherwise(
    tokens: dict[str, str], alice: Any, project: Palace, other: Palace
) -> None:
    personal = Palace.objects.get(personal_owner=alice)
    token = _project_token(alice)
    saved, found, stats, handoff, named, mine = run(
        call_each(
            token,
            [
                ("memory_save", {"content": "The demo app deploys from the release branch.", "kind": "fact"}),
                ("memory_search", {"query": "demo app deploys release branch"}),
                ("memory_stats", {}),
                ("memory_handoff_save", {"doing": "wiring the deploy job", "expected_version": 0}),
                (
                    "memory_save",
                    {"content": "The other repo pins Python 3.12 in CI.", "kind": "fact", "project": OTHER_ORIGIN},
                ),
                ("memory_save", {"content": "I take my coffee black.", "kind": "preference", "project": "personal"}),
            ],
        )
    )
    # No `project`: the token's default project (stored rows, not only labels).
    in_project = Memory.objects.get(pk=_saved_id(saved))
    assert in_project.palace_id == project.pk
    assert saved.structured_content["palace"] == project.label
    assert OpLog.objects.filter(op="memory.save", target_id=in_project.pk, palace_id=project.pk).exists()
    assert in_project.pk in [hit["id"] for hit in found.structured_content["hits"]], text_of(found)
    assert not stats.is_error and stats.structured_content["palace"] == project.label
    assert not handoff.is_error, text_of(handoff)
    assert HandoffVersion.objects.get(user=alice).palace_id == project.pk
    # An explicit `project` wins: another project, or "personal".
    assert Memory.objects.get(pk=_saved_id(named)).palace_id == other.pk
    assert Memory.objects.get(pk=_saved_id(mine)).palace_id == personal.pk

    # A token without a default project: the personal palace, as before.
    (plain,) = run(call_each(tokens["alice"], [("memory_save", {"content": "Standup is at 9:30.", "kind": "fact"})]))
    assert Memory.objects.get(pk=_saved_id(plain)).palace_id == personal.pk


def test_a_default_project_the_user_left_is_an_error_not_a_save_elsewhere(
    tokens: dict[str, str], bob: Any, project: Palace, system: Actor
) -> None:
    member_set(palace=project, user=bob, role="editor", actor=system)
    token = _project_token(bob)
    bob_personal = Palace.objects.get(personal_owner=bob)

    # Positive control: while bob is an editor, the token's saves land in the project.
    (member,) = run(call_each(token, [("memory_save", {"content": "Bob owns the flaky e2e suite.", "kind": "fact"})]))
    assert Memory.objects.get(pk=_saved_id(member)).palace_id == project.pk

    member_remove(palace=project, user=bob, actor=system)
    memories, ops = Memory.objects.count(), OpLog.objects.count()
    save, stats, handoff, personal = run(
        call_each(
            token,
            [
                ("memory_save", {"content": "Bob's note after leaving the project.", "kind": "fact"}),
                ("memory_stats", {}),
                ("memory_handoff_load", {}),
                (
                    "memory_save",
                    {"content": "Bob keeps his notes in a paper diary.", "kind": "fact", "project": "personal"},
                ),
            ],
        )
    )
    for name, result in (("memory_save", save), ("memory_stats", stats), ("memory_handoff_load", handoff)):
        assert result.is_error, (name, text_of(result))
        message = text_of(result)
        assert "default project is not one of your palaces" in message and "`project`" in message, (name, message)
        assert PROJECT_ORIGIN not in message and "demo" not in message  # the palace is not named to a non-member
    assert not Memory.objects.filter(content__contains="after leaving").exists()
    # The explicit personal palace still works for the same token: one new row, in bob's palace, with its op row.
    assert Memory.objects.get(pk=_saved_id(personal)).palace_id == bob_personal.pk
    assert (Memory.objects.count(), OpLog.objects.count()) == (memories + 1, ops + 1)
