"""memory_restore through the official MCP client: a forgotten or archived memory comes back to active (and to
search) through the same service as POST /memories/{id}/restore, with the status and epitaph it had, an op row, and
refusals that say what to fix."""

from __future__ import annotations

from typing import Any

from memory.lifecycle import memory_archive
from memory.models import Memory
from palace.actors import Actor
from palace.models import OpLog
from tests.api.mcp.conftest import call_each, run, text_of

CONTENT = "The billing service retries failed webhooks three times with backoff."
QUERY = "billing webhooks retries backoff"


def _hit_ids(result: Any) -> list[int]:
    assert not result.is_error, text_of(result)
    return [hit["id"] for hit in result.structured_content["hits"]]


def _save(token: str, content: str = CONTENT) -> int:
    (saved,) = run(call_each(token, [("memory_save", {"content": content, "kind": "fact"})]))
    assert not saved.is_error, text_of(saved)
    return int(saved.structured_content["items"][0]["id"])


def _forgotten(token: str) -> int:
    memory_id = _save(token)
    (forgot,) = run(call_each(token, [("memory_forget", {"id": memory_id, "reason": "we thought it was two"})]))
    assert not forgot.is_error, text_of(forgot)
    return memory_id


def test_forget_then_restore_brings_it_back_in_search_with_its_epitaph(tokens: dict[str, str], alice: Any) -> None:
    memory_id = _forgotten(tokens["alice"])
    (gone,) = run(call_each(tokens["alice"], [("memory_search", {"query": QUERY})]))
    assert memory_id not in _hit_ids(gone)

    restored, found = run(
        call_each(
            tokens["alice"],
            [
                ("memory_restore", {"id": memory_id, "reason": "it is three after all"}),
                ("memory_search", {"query": QUERY}),
            ],
        )
    )
    assert not restored.is_error, text_of(restored)
    out = restored.structured_content
    assert (out["memory"]["id"], out["memory"]["status"], out["was"]) == (memory_id, "active", "forgotten")
    assert out["epitaph"] == "we thought it was two"
    assert f"Restored #{memory_id}" in text_of(restored) and "we thought it was two" in text_of(restored)
    assert memory_id in _hit_ids(found)
    row = Memory.objects.get(pk=memory_id)
    assert (row.status, row.epitaph) == ("active", "")
    op = OpLog.objects.get(op="memory.restore", target_id=memory_id)
    assert op.reason == "it is three after all" and op.detail == {"from_status": "forgotten"}
    assert op.actor_user_id == alice.pk and op.actor_token_id is not None


def test_an_archived_memory_is_restored_too(tokens: dict[str, str], alice: Any) -> None:
    memory_id = _save(tokens["alice"])
    memory_archive(memory_id=memory_id, actor=Actor.for_system("decay"), reason="decayed: never accessed")

    (restored,) = run(call_each(tokens["alice"], [("memory_restore", {"id": memory_id})]))
    assert not restored.is_error, text_of(restored)
    assert restored.structured_content["was"] == "archived"
    assert restored.structured_content["epitaph"] == "decayed: never accessed"
    assert Memory.objects.get(pk=memory_id).status == "active"


def test_an_outsider_gets_not_found_and_the_owner_restores(tokens: dict[str, str]) -> None:
    memory_id = _forgotten(tokens["alice"])
    missing = memory_id + 1000
    ops = OpLog.objects.count()

    theirs, nowhere = run(
        call_each(tokens["charlie"], [("memory_restore", {"id": memory_id}), ("memory_restore", {"id": missing})])
    )
    assert theirs.is_error and nowhere.is_error
    assert "no memory with id=" in text_of(theirs) and "`id`" in text_of(theirs)
    # Another tenant's memory answers exactly like one that does not exist.
    assert text_of(theirs).replace(str(memory_id), "N") == text_of(nowhere).replace(str(missing), "N")
    assert Memory.objects.get(pk=memory_id).status == "forgotten" and OpLog.objects.count() == ops

    # Positive control: the owner's same call restores it.
    (own,) = run(call_each(tokens["alice"], [("memory_restore", {"id": memory_id})]))
    assert not own.is_error, text_of(own)
    assert Memory.objects.get(pk=memory_id).status == "active"
    assert OpLog.objects.filter(op="memory.restore", target_id=memory_id).count() == 1


def test_bad_input_is_a_tool_error_naming_the_argument(tokens: dict[str, str]) -> None:
    memory_id = _forgotten(tokens["alice"])
    active = _save(tokens["alice"], "The staging database is refreshed from production every Sunday night.")
    ops = OpLog.objects.count()
    zero, word, missing_arg, active_one = run(
        call_each(
            tokens["alice"],
            [
                ("memory_restore", {"id": 0}),
                ("memory_restore", {"id": "seven"}),
                ("memory_restore", {}),
                ("memory_restore", {"id": active}),
            ],
        )
    )
    for result in (zero, word, missing_arg):
        # The argument error names the argument, what is wrong and what to send, on a line of its own.
        assert result.is_error and "\nargument id: " in text_of(result), text_of(result)
        assert "; send an integer of at least 1" in text_of(result), text_of(result)
    assert active_one.is_error and "only forgotten or archived memories can be restored" in text_of(active_one)
    assert Memory.objects.get(pk=memory_id).status == "forgotten" and OpLog.objects.count() == ops
