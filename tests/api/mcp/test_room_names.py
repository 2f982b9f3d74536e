"""`memory_search room=` takes a room as the panel shows it (issue 26): the stored English name, the kind it holds,
or its translated name (事实厅, 事实厅-2) in every language the panel speaks, through MCP (the official client) and
REST alike; an unknown room is refused naming the room argument and the accepted spellings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory.models import Memory
from tests.api.mcp.conftest import call_each, run, text_of

DEPLOY = "The deploy pipeline runs the staging smoke tests before every release"
DECIDED = "We decided the deploy pipeline keeps the staging smoke tests mandatory"


def _save(token: str) -> tuple[int, int]:
    saved = run(
        call_each(
            token,
            [
                ("memory_save", {"content": DEPLOY, "kind": "fact"}),
                ("memory_save", {"content": DECIDED, "kind": "decision"}),
            ],
        )
    )
    assert not any(r.is_error for r in saved), [text_of(r) for r in saved]
    fact = Memory.objects.get(content=DEPLOY)
    decision = Memory.objects.get(content=DECIDED)
    assert (fact.slot.room.name, decision.slot.room.name) == ("Fact Hall", "Decision Chamber")
    return fact.pk, decision.pk


def _ids(result: Any) -> set[int]:
    assert not result.is_error, text_of(result)
    return {h["id"] for h in result.structured_content["hits"]}


def test_mcp_search_takes_the_room_in_english_by_kind_and_in_chinese(tokens: dict[str, str]) -> None:
    fact, decision = _save(tokens["alice"])
    asked = ["Fact Hall", "fact hall", "fact", "事实厅", "决策室", "Decision Chamber"]
    results = run(
        call_each(
            tokens["alice"], [("memory_search", {"query": "deploy staging smoke tests", "room": r}) for r in asked]
        )
    )
    found = dict(zip(asked, map(_ids, results), strict=True))
    assert found["Fact Hall"] == found["fact hall"] == found["fact"] == found["事实厅"] == {fact}
    assert found["决策室"] == found["Decision Chamber"] == {decision}  # the control: the room really filters


def test_mcp_search_refuses_an_unknown_room_naming_the_accepted_ones(tokens: dict[str, str]) -> None:
    fact, _ = _save(tokens["alice"])
    unknown, known = run(
        call_each(
            tokens["alice"],
            [
                ("memory_search", {"query": "deploy", "room": "Kitchen"}),
                ("memory_search", {"query": "deploy", "room": "事实厅"}),
            ],
        )
    )
    assert unknown.is_error
    said = text_of(unknown)
    assert "room" in said and "'Kitchen'" in said
    assert "Fact Hall / 事实厅" in said and "Decision Chamber / 决策室" in said
    assert _ids(known) == {fact}


def test_rest_search_takes_the_translated_room_and_refuses_an_unknown_one(
    tokens: dict[str, str], bearer: Callable[[str], dict[str, str]], client: Any
) -> None:
    fact, decision = _save(tokens["alice"])
    auth = bearer(tokens["alice"])
    query = "deploy staging smoke tests"

    chinese = client.get("/api/v1/search", {"query": query, "room": "事实厅"}, **auth)
    english = client.get("/api/v1/search", {"query": query, "room": "Decision Chamber"}, **auth)
    posted = client.post("/api/v1/search", {"query": query, "room": "决策室"}, content_type="application/json", **auth)
    unknown = client.get("/api/v1/search", {"query": query, "room": "Kitchen"}, **auth)

    assert chinese.status_code == english.status_code == posted.status_code == 200, chinese.content
    assert {h["memory"]["id"] for h in chinese.json()["hits"]} == {fact}
    assert {h["memory"]["id"] for h in english.json()["hits"]} == {decision}
    assert {h["memory"]["id"] for h in posted.json()["hits"]} == {decision}
    assert unknown.status_code == 422, unknown.content
    error = unknown.json()["error"]
    assert error["field"] == "room" and "'Kitchen'" in error["message"] and "Fact Hall / 事实厅" in error["message"]
