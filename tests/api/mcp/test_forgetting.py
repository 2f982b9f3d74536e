"""Issue 13 through the official MCP client: importance and restore on memory_save, decay of an MCP-saved memory
with time moved forward, memory_checkout and memory_distill_undo — each refused to an outsider (with the owner as
the positive control)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import time_machine
from django.utils import timezone

from memory.jobs import decay_run, distill_run
from memory.models import Memory
from palace.models import OpLog, Palace
from tests.api.mcp.conftest import call, mcp_client, run, text_of
from tests.fakes.memories import make_memory, topic_vectors


def _ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def _save(token: str, content: str, kind: str, **extra: Any) -> dict[str, Any]:
    out = _ok(await call(token, "memory_save", {"content": content, "kind": kind, **extra}))
    return out["items"][0]


def test_an_mcp_saved_memory_that_qualifies_decays_one_under_review_does_not(tokens: dict[str, str]) -> None:
    alice = tokens["alice"]
    faint = run(_save(alice, "Maybe we try the blue theme for the dashboard today.", "episode"))
    reviewed = run(_save(alice, "We talked about the office plants.", "episode", importance=0.1))
    important = run(_save(alice, "We must always tag releases before deploying.", "decision"))
    low = run(_save(alice, "The old wiki lives at wiki.example.test.", "fact", importance=0.2))
    rows = {m.pk: m for m in Memory.objects.filter(pk__in=[faint["id"], reviewed["id"], important["id"], low["id"]])}
    assert rows[faint["id"]].importance == 0.25 and not rows[faint["id"]].review_enrolled
    assert rows[low["id"]].importance == 0.2  # the caller's value wins over the rule (fact 0.5)
    assert rows[important["id"]].importance == 0.85
    Memory.objects.filter(pk=reviewed["id"]).update(review_enrolled=True)  # a person put it under review
    later = timezone.now() + timedelta(days=45)
    with time_machine.travel(later, tick=False):
        fresh = make_memory(
            Palace.objects.get(pk=rows[faint["id"]].palace_id), "fresh", importance=0.1, created_at=later
        )
        result = decay_run()
    assert sorted(result.archived) == sorted([faint["id"], low["id"]])
    statuses = dict(Memory.objects.filter(pk__in=[*rows, fresh.pk]).values_list("pk", "status"))
    assert statuses[reviewed["id"]] == statuses[important["id"]] == statuses[fresh.pk] == "active"


def test_memory_save_defers_on_a_forgotten_memory_and_restore_true_brings_it_back(tokens: dict[str, str]) -> None:
    alice = tokens["alice"]
    first = run(_save(alice, "The build cache lives in bucket atrium-ci-cache.", "fact"))
    _ok(run(call(alice, "memory_forget", {"id": first["id"], "reason": "bucket deleted"})))
    again = run(
        call(alice, "memory_save", {"content": "The build cache lives in bucket atrium-ci-cache.", "kind": "fact"})
    )
    item = _ok(again)["items"][0]
    assert item["disposition"] == "defer" and item["id"] is None and item["forgotten"] == first["id"]
    assert "bucket deleted" in item["hint"] and "restore: true" in text_of(again)
    back = run(_save(alice, "The build cache lives in bucket atrium-ci-cache.", "fact", restore=True))
    assert back["restored"] is True and back["id"] == first["id"]
    assert Memory.objects.get(pk=first["id"]).status == "active"
    assert Memory.objects.filter(content__contains="atrium-ci-cache").count() == 1


async def _checkout_flow(alice: str, charlie: str) -> tuple[Any, Any, int, int]:
    async with mcp_client(alice) as c:
        saved = _ok(await c.call_tool("memory_save", {"content": "Standup is at 9:30 in room Ada.", "kind": "fact"}))
        old_id = saved["items"][0]["id"]
        new = _ok(await c.call_tool("memory_update", {"id": old_id, "content": "Standup is at 10:00 in room Ada."}))
        head = new["memory"]["id"]
    async with mcp_client(charlie) as c:
        refused = await c.call_tool("memory_checkout", {"id": old_id})
    async with mcp_client(alice) as c:
        done = await c.call_tool("memory_checkout", {"id": old_id, "reason": "the change was reverted"})
    return refused, done, old_id, head


def test_memory_checkout_brings_back_a_version_and_refuses_an_outsider(tokens: dict[str, str]) -> None:
    refused, done, old_id, head = run(_checkout_flow(tokens["alice"], tokens["charlie"]))
    assert refused.is_error and "not found" in text_of(refused).lower()
    out = _ok(done)
    assert out["checkoutOf"] == old_id and out["supersedes"] == head
    new = Memory.objects.get(pk=out["memory"]["id"])
    assert new.content == "Standup is at 9:30 in room Ada." and new.status == "active" and new.source_kind == "mcp"
    assert Memory.objects.get(pk=head).status == "superseded"
    assert "Brought back" in text_of(done)
    assert OpLog.objects.filter(op="memory.checkout", target_id=new.pk).count() == 1


def test_memory_distill_undo_through_the_client(tokens: dict[str, str], alice: Any) -> None:
    palace = Palace.objects.get(personal_owner=alice)
    members = [
        make_memory(palace, content=f"Deploys go out on Tuesdays, note {i}.", kind="decision", embedding=v)
        for i, v in enumerate(topic_vectors(3, seed=7))
    ]
    (applied,) = distill_run(mode="apply", llm=None).clusters
    refused = run(call(tokens["charlie"], "memory_distill_undo", {"id": applied.rule_id}))
    assert refused.is_error
    assert Memory.objects.get(pk=applied.rule_id).status == "active"
    read_only = run(call(tokens["alice_read"], "memory_distill_undo", {"id": applied.rule_id}))
    assert read_only.is_error
    out = _ok(run(call(tokens["alice"], "memory_distill_undo", {"id": applied.rule_id, "reason": "too coarse"})))
    assert out["restored"] == [m.pk for m in members] and out["status"] == "archived"
    assert all(Memory.objects.get(pk=m.pk).status == "active" for m in members)
