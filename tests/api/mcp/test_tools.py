"""Every tool through the official client, in both protocol eras: structured output, text rendering, wrapping."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import Memory
from memory.text.wrapping import CLOSE_TAG, OPEN_TAG
from palace.models import OpLog
from tests.api.mcp.conftest import MODES, mcp_client, run, text_of

WRAPPED = {
    "memory_search",
    "memory_timeline",
    "memory_review_queue",
    "memory_review",
    "memory_examine",
    "memory_neighbors",
    "memory_tour",
    "memory_audit_forgotten",
    "memory_profile",
    "memory_episode_timeline",
}


def _ok(result: Any, tool: str) -> dict[str, Any]:
    assert not result.is_error, (tool, text_of(result))
    assert isinstance(result.structured_content, dict), tool
    text = text_of(result)
    if tool in WRAPPED:
        assert text.startswith(OPEN_TAG) and text.rstrip().endswith(CLOSE_TAG), (tool, text)
        assert text.count(OPEN_TAG) == 1, (tool, text)
    return result.structured_content


async def _walk(token: str, mode: str) -> dict[str, Any]:
    """Call every tool once (and some twice), returning what later assertions need."""
    seen: dict[str, Any] = {}
    async with mcp_client(token, mode) as c:

        async def ok(tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
            result = await c.call_tool(tool, args or {})
            seen.setdefault(tool, []).append(text_of(result))
            return _ok(result, tool)

        one = await ok(
            "memory_save",
            {"content": "Alice prefers green tea over coffee in the morning.", "kind": "preference", "placard": "tea"},
        )
        assert one["items"][0]["disposition"] == "accept"
        first_id = one["items"][0]["id"]
        assert one["items"][0]["coordinate"].startswith("Preference Pavilion#")
        batch = await ok(
            "memory_save",
            {
                "items": [
                    {"content": "The deploy pipeline runs on GitHub Actions with manual approval.", "kind": "fact"},
                    {"content": "We decided to use PostgreSQL with pgvector for all storage.", "kind": "decision"},
                    {"content": "ok", "kind": "fact"},
                ]
            },
        )
        assert [i["disposition"] for i in batch["items"]] == ["accept", "accept", "drop"]
        fact_id, decision_id = batch["items"][0]["id"], batch["items"][1]["id"]

        found = await ok("memory_search", {"query": "what tea does Alice like", "limit": 5})
        assert found["mode"] == "hybrid" and found["degraded"] == []
        assert found["hits"][0]["id"] == first_id
        hit = found["hits"][0]
        assert hit["label"] and hit["ref"].endswith(found["batchId"][2:8])
        text = seen["memory_search"][-1]
        assert f"id={first_id} ref={hit['ref']}" in text
        assert f"batch={found['batchId']}" in text.splitlines()[-2]

        verdict = await ok(
            "memory_assess",
            {"batchId": found["batchId"], "evidenceRefs": [hit["ref"]], "adequate": True, "nextStrategy": "answer"},
        )
        assert verdict["verdict"] == "sufficient" and verdict["memoryIds"] == [first_id]

        created = await ok("memory_timeline", {})
        assert [r["memory"]["id"] for r in created["rows"]][:1] == [decision_id]
        toured = await ok("memory_timeline", {"order": "tour"})
        assert {r["memory"]["id"] for r in toured["rows"]} == {first_id, fact_id, decision_id}
        assert all(r["seq"] and r["coordinate"] for r in toured["rows"])
        episodes = await ok("memory_episode_timeline", {"around": first_id})
        assert episodes["mode"] == "around" and episodes["around"]["id"] == first_id and episodes["groups"] == []

        examined = await ok("memory_examine", {"ids": [first_id, fact_id, 999_999_999]})
        assert [m["id"] for m in examined["memories"]] == [first_id, fact_id]
        assert examined["notFound"] == [999_999_999]

        await ok("memory_neighbors", {"id": fact_id, "hops": 2})
        audit = await ok("memory_review", {"id": first_id})
        # Newest first: the sufficient assess above reinforced it (issue 13), after it was saved.
        assert audit["memory"]["id"] == first_id
        assert [o["op"] for o in audit["oplog"]][:2] == ["memory.reinforce", "memory.save"]
        stats = await ok("memory_stats", {})
        assert stats["total"] == 3 and {r["name"] for r in stats["rooms"]} >= {"Fact Hall", "Decision Chamber"}
        assert "Room directory" in seen["memory_stats"][-1]

        tour = await ok("memory_tour", {"mode": "fixed"})
        assert tour["total"] == 3
        thematic = await ok("memory_tour", {"mode": "thematic", "theme": "storage database", "stops": 3})
        assert thematic["mode"] == "thematic"

        reported = await ok("memory_report", {"id": fact_id, "outcome": "success"})
        assert reported["recorded"] == "outcome" and reported["confidence"] > 0.7
        queue = await ok("memory_review_queue", {})
        assert queue["due"] >= 1
        assert all("content" not in item for item in queue["items"])
        graded = await ok("memory_report", {"id": queue["items"][0]["id"], "grade": 4})
        assert graded["recorded"] == "grade" and graded["intervalDays"] >= 1

        corrected = await ok(
            "memory_update",
            {"id": fact_id, "content": "The deploy pipeline runs on GitHub Actions; approval is automatic now."},
        )
        assert corrected["supersedes"] == fact_id and corrected["memory"]["version"] == 2
        forgot = await ok("memory_forget", {"id": decision_id, "reason": "superseded by the new storage plan"})
        assert forgot["status"] == "forgotten"
        closed = await ok("memory_audit_forgotten", {})
        assert [m["id"] for m in closed["memories"]] == [decision_id]
        assert "epitaph: superseded by the new storage plan" in seen["memory_audit_forgotten"][-1]

        distilled = await ok("memory_distill", {"mode": "suggest"})
        assert distilled["mode"] == "suggest" and distilled["applied"] == 0

        profile = await ok("memory_profile", {})
        assert profile["tokens"] <= profile["budget"] == 1024
        assert any(line["id"] == first_id for line in profile["lines"])
        assert "Preference Pavilion#" in profile["text"]

        resource = await c.read_resource("atrium://profile")
        assert resource.contents[0].text == profile["text"]
        seen["ids"] = {"first": first_id, "fact": fact_id, "decision": decision_id, "new": corrected["memory"]["id"]}
    return seen


@pytest.mark.parametrize("mode", MODES)
def test_every_tool_answers_in_both_eras(tokens: dict[str, str], alice: Any, mode: str, settings: Any) -> None:
    settings.ATRIUM_REVIEW_FIRST_DUE_DAYS = 0
    seen = run(_walk(tokens["alice"], mode))
    ids = seen["ids"]
    assert Memory.objects.get(pk=ids["fact"]).status == "superseded"
    assert Memory.objects.get(pk=ids["new"]).source_kind == "mcp"
    assert Memory.objects.get(pk=ids["decision"]).epitaph == "superseded by the new storage plan"
    assert OpLog.objects.filter(op="evidence.assess", actor_user=alice).count() == 1
    # The token, not an argument, is the actor of every write.
    saves = OpLog.objects.filter(op="memory.save")
    assert saves.exists() and all(row.actor_user_id == alice.pk and row.actor_token_id for row in saves)


def test_unknown_tool_is_an_error_result(tokens: dict[str, str]) -> None:
    async def go() -> Any:
        async with mcp_client(tokens["alice"]) as c:
            return await c.call_tool("memory_nope", {})

    result = run(go())
    assert result.is_error and "Unknown tool" in text_of(result)


def test_search_with_no_match_says_so_and_registers_no_batch(tokens: dict[str, str]) -> None:
    async def go() -> Any:
        async with mcp_client(tokens["alice"]) as c:
            return await c.call_tool("memory_search", {"query": "zebra quantum"})

    result = run(go())
    assert not result.is_error
    assert result.structured_content["hits"] == [] and result.structured_content["batchId"] is None
    assert "No memory matched" in text_of(result)


def test_search_names_the_words_too_common_to_match_on_their_own(tokens: dict[str, str], monkeypatch: Any) -> None:
    import memory.search.search as search_module
    from memory.search import SearchResult

    real = search_module.memory_search
    calls: list[list[str]] = []

    def with_common_words(**kwargs: Any) -> SearchResult:
        result = real(**kwargs)
        result.common_words = ["coffe"]  # what the lexical plan reports when a word is common in a large store
        calls.append(result.common_words)
        return result

    import api.mcp.tools.recall as tools_module

    async def search() -> Any:
        async with mcp_client(tokens["alice"]) as client:
            await client.call_tool("memory_save", {"content": "The espresso machine is on floor two", "kind": "fact"})
            return await client.call_tool("memory_search", {"query": "coffee espresso"})

    control = run(search())
    assert control.structured_content["commonWords"] == []
    assert "too common" not in text_of(control)

    monkeypatch.setattr(tools_module, "memory_search", with_common_words)
    found = run(search())

    assert calls, "the tool went through memory_search"
    assert found.structured_content["commonWords"] == ["coffe"]
    assert "too common to match on their own: coffe" in text_of(found)
