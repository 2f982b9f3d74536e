"""REST: `entities` on POST /api/v1/memories (one and per batch item, validated with a 422 that says why) and the
entity tags of every hit of /api/v1/search, with the `ent` label; an outsider gets neither."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.api.conftest import Api

URL = "/api/v1/memories"


def test_save_links_stated_entities_and_search_returns_tags(
    alice: Any,
    charlie: Any,
    api_for: Callable[..., Api],
) -> None:
    api = api_for(alice)
    status, body = api.post(
        URL,
        {
            "content": "Zephyrine approved the vendor contract on Tuesday.",
            "kind": "decision",
            "entities": [{"name": "Zephyrine", "kind": "person", "aliases": ["Zeph"]}],
        },
    )
    assert status == 201, body
    assert body["entities_by"] == "rules" and body["entities_fallback"] == "" and body["entities_error"] == ""
    assert [(e["name"], e["kind"], e["source"]) for e in body["entities"]] == [("Zephyrine", "person", "agent")]

    status, found = api.get("/api/v1/search", query="did Zeph approve the vendor contract?")
    assert status == 200, found
    hit = found["hits"][0]
    assert hit["memory"]["id"] == body["memory"]["id"] and hit["label"].endswith("+ ent")
    assert [(e["name"], e["kind"]) for e in hit["entities"]] == [("Zephyrine", "person")]

    status, theirs = api_for(charlie).get("/api/v1/search", query="did Zeph approve the vendor contract?")
    assert status == 200 and theirs["hits"] == []  # positive control: alice's search above


def test_batch_items_take_entities_and_bad_entities_are_refused_with_a_reason(
    alice: Any,
    api_for: Callable[..., Api],
) -> None:
    api = api_for(alice)
    status, body = api.post(
        URL,
        {"items": [{"content": "The export runs on the old cron box nightly.", "entities": [{"name": "cron box"}]}]},
    )
    assert status == 200, body
    assert [(e["name"], e["source"]) for e in body["items"][0]["entities"]] == [("cron box", "agent")]

    status, body = api.post(URL, {"content": "The export owner is away.", "entities": [{"name": "x", "kind": "a/b"}]})
    assert status == 422 and "entities[0].kind" in str(body), body
    status, body = api.post(URL, {"content": "The export owner is away.", "entities": [{"name": "x", "colour": 1}]})
    assert status == 422, body
    status, body = api.post(URL, {"items": [{"content": "The export owner is away."}], "entities": [{"name": "x"}]})
    assert status == 422 and "each item its own entities" in str(body), body
