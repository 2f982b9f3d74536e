"""MCP memory_resolve through the official client: every decision, the edge id in the save result, search rows and
memory_review, and an outsider refused (with the owner's positive control)."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import Edge, Memory
from palace.models import OpLog
from tests.api.mcp.conftest import call_each, run, text_of
from tests.conftest import PROJECT_ORIGIN

OLD = "The API server listens on port 8000."
NEW = "The API server listens on port 8001."


def _contradiction(token: str, **where: Any) -> tuple[int, int, int, str]:
    first, second = run(
        call_each(
            token,
            [
                ("memory_save", {"content": OLD, "kind": "fact", "placard": "API port", **where}),
                ("memory_save", {"content": NEW, "kind": "fact", "placard": "API port", **where}),
            ],
        )
    )
    item = second.structured_content["items"][0]
    assert item["disposition"] == "defer" and len(item["edges"]) == 1, text_of(second)
    return first.structured_content["items"][0]["id"], item["id"], item["edges"][0], text_of(second)


@pytest.mark.parametrize("decision", ["keep_newer", "keep_older", "both_stand", "merge"])
def test_every_decision_through_mcp(tokens: dict[str, str], decision: str) -> None:
    older, newer, edge, saved = _contradiction(tokens["alice"])
    assert f"memory_resolve (edge={edge}" in saved and "dismiss the edge" not in saved
    args: dict[str, Any] = {"edge": edge, "decision": decision, "reason": "decided by the agent"}
    if decision == "merge":
        args["content"] = "The API server listens on port 8001; 8000 was the old port."
    (result,) = run(call_each(tokens["alice"], [("memory_resolve", args)]))
    assert not result.is_error, text_of(result)
    out = result.structured_content
    assert (out["edge"], out["newer"], out["older"]) == (edge, newer, older)
    assert f"Resolved edge={edge}" in text_of(result)
    expected = {
        "keep_newer": ("superseded", "active"),
        "keep_older": ("active", "forgotten"),
        "both_stand": ("active", "active"),
        "merge": ("superseded", "superseded"),
    }[decision]
    assert (Memory.objects.get(pk=older).status, Memory.objects.get(pk=newer).status) == expected
    op = OpLog.objects.get(op="edge.decide", target_id=edge)
    assert op.detail["decision"] == decision and op.actor_token_id is not None
    if decision == "merge":
        assert Memory.objects.get(pk=out["newMemory"]["id"]).source_kind == "mcp"
    (stats,) = run(call_each(tokens["alice"], [("memory_stats", {})]))
    assert stats.structured_content["pendingContradictions"] == 0


def test_edge_ids_show_in_search_rows_and_review(tokens: dict[str, str]) -> None:
    older, newer, edge, _ = _contradiction(tokens["alice"])
    search, review = run(
        call_each(
            tokens["alice"],
            [("memory_search", {"query": "API server port"}), ("memory_review", {"id": older})],
        )
    )
    hits = {h["id"]: h for h in search.structured_content["hits"]}
    assert hits[older]["openEdges"] == [edge] and f"open contradiction: edge={edge}" in text_of(search)
    (row,) = review.structured_content["contradictions"]
    assert row["id"] == edge and row["status"] == "pending" and row["judged"].startswith("judged by the rules")
    assert f"edge={edge}" in text_of(review) and "memory_resolve" in text_of(review)
    run(call_each(tokens["alice"], [("memory_resolve", {"edge": edge, "decision": "both_stand", "reason": "ok"})]))
    (review,) = run(call_each(tokens["alice"], [("memory_review", {"id": older})]))
    assert review.structured_content["contradictions"][0]["status"] == "dismissed"  # reflected at once


def test_an_outsider_cannot_resolve_and_the_owner_can(tokens: dict[str, str], project: Any) -> None:
    _, _, edge, _ = _contradiction(tokens["alice"], project=PROJECT_ORIGIN)
    args = {"edge": edge, "decision": "both_stand", "reason": "not mine"}
    denied, missing = run(
        call_each(tokens["charlie"], [("memory_resolve", args), ("memory_resolve", {**args, "edge": 987654})])
    )
    assert denied.is_error and "edge not found" in text_of(denied)
    assert text_of(denied) == text_of(missing)
    (read,) = run(call_each(tokens["alice_read"], [("memory_resolve", args)]))
    assert read.is_error and "read scope" in text_of(read)
    assert Edge.objects.get(pk=edge).status == "pending"
    (allowed,) = run(call_each(tokens["alice"], [("memory_resolve", args)]))
    assert not allowed.is_error and Edge.objects.get(pk=edge).status == "dismissed"


def test_bad_arguments_are_tool_errors_the_model_can_act_on(tokens: dict[str, str]) -> None:
    _, _, edge, _ = _contradiction(tokens["alice"])
    bad, merge, both = run(
        call_each(
            tokens["alice"],
            [
                ("memory_resolve", {"edge": edge, "decision": "flip"}),
                ("memory_resolve", {"edge": edge, "decision": "merge"}),
                ("memory_resolve", {"edge": edge, "decision": "both_stand"}),
            ],
        )
    )
    assert bad.is_error and merge.is_error and "content" in text_of(merge)
    assert both.is_error and "reason" in text_of(both)
