"""REST facts: POST /api/v1/facts (write) and GET /api/v1/facts (query on both time axes), who may do what, and
GET /api/v1/search's as-of view."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import time_machine

from memory.models import Entity, Fact
from palace.models import OpLog, Palace

URL = "/api/v1/facts"
JAN = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
MAR = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)


def test_write_then_query_as_of_and_known_at(
    alice: Any, token_for: Callable[..., str], bearer: Callable[[str], dict[str, str]], client: Any
) -> None:
    auth = bearer(token_for(alice))
    with time_machine.travel(JAN, tick=False):
        first = client.post(
            URL,
            {"facts": [{"entity": "Maria", "content": "in Lisbon"}, {"entity": "Maria", "content": ""}]},
            content_type="application/json",
            **auth,
        )
    assert first.status_code == 200, first.content
    body = first.json()
    assert [w["index"] for w in body["written"]] == [0]
    assert body["failed"] == [{"index": 1, "reason": "content is empty", "candidates": []}]
    old = body["written"][0]["id"]
    with time_machine.travel(MAR, tick=False):
        client.post(
            URL,
            {"facts": [{"entity": "maria", "content": "in Porto", "replaces": old, "valid_from": "2026-03-01"}]},
            content_type="application/json",
            **auth,
        )

    now = client.get(URL, {"entity": "Maria"}, **auth).json()
    feb = client.get(URL, {"entity": "Maria", "as_of": "2026-02-01T00:00:00Z"}, **auth).json()
    known = client.get(URL, {"entity": "Maria", "known_at": "2026-02-01T00:00:00Z"}, **auth).json()
    every = client.get(URL, {"entity": "Maria", "include_invalid": "true"}, **auth).json()

    assert [f["content"] for f in now["facts"]] == ["in Porto"] and now["hidden"] == 1
    assert [f["content"] for f in feb["facts"]] == ["in Lisbon"]
    assert [(f["content"], f["valid_to"]) for f in known["facts"]] == [("in Lisbon", None)]
    assert [(f["content"], f["state"]) for f in every["facts"]] == [("in Lisbon", "replaced"), ("in Porto", "current")]
    assert OpLog.objects.filter(op="fact.write", actor_user=alice).count() == 2


def test_bad_input_is_a_4xx_that_says_why(
    alice: Any, token_for: Callable[..., str], bearer: Callable[[str], dict[str, str]], client: Any
) -> None:
    auth = bearer(token_for(alice))
    nothing = client.get(URL, **auth)
    bad_time = client.get(URL, {"entity": "Maria", "as_of": "last spring"}, **auth)
    too_many = client.post(
        URL, {"facts": [{"entity": "X", "content": "y"}] * 51}, content_type="application/json", **auth
    )
    unknown = client.get(URL, {"entity_id": 987654}, **auth)

    assert nothing.status_code == 422 and "entity" in nothing.json()["error"]["message"]
    assert bad_time.status_code == 422
    assert too_many.status_code == 422
    assert unknown.status_code == 404
    assert Fact.objects.count() == 0


def test_outsider_sees_nothing_and_a_read_token_cannot_write(
    alice: Any,
    charlie: Any,
    project: Palace,
    token_for: Callable[..., str],
    bearer: Callable[[str], dict[str, str]],
    client: Any,
) -> None:
    owner = bearer(token_for(alice))
    made = client.post(
        URL,
        {"facts": [{"entity": "Bluebird", "content": "launches in March"}], "palace": project.pk},
        content_type="application/json",
        **owner,
    ).json()
    entity_id = made["written"][0]["entity_id"]
    outsider = bearer(token_for(charlie))
    reader = bearer(token_for(alice, scope="read", label="read"))

    by_id = client.get(URL, {"entity_id": entity_id}, **outsider)
    by_name = client.get(URL, {"entity": "Bluebird"}, **outsider)
    in_project = client.get(URL, {"entity": "Bluebird", "palace": project.pk}, **outsider)
    write = client.post(
        URL,
        {"facts": [{"entity": "Bluebird", "content": "x"}], "palace": project.pk},
        content_type="application/json",
        **outsider,
    )
    read_write = client.post(
        URL, {"facts": [{"entity": "Bluebird", "content": "x"}]}, content_type="application/json", **reader
    )
    mine = client.get(URL, {"entity_id": entity_id}, **owner)
    read_query = client.get(URL, {"entity": "Bluebird"}, **reader)

    assert by_id.status_code == 404 and by_name.json()["entity"] is None and by_name.json()["suggestions"] == []
    assert in_project.status_code == 404 and write.status_code == 404
    assert read_write.status_code == 403
    # Positive controls: the owner reads it, by id; a read token queries it.
    assert [f["content"] for f in mine.json()["facts"]] == ["launches in March"]
    assert [f["content"] for f in read_query.json()["facts"]] == ["launches in March"]
    assert Fact.objects.count() == 1 and Entity.objects.count() == 1


def test_search_says_it_is_an_as_of_view(
    alice: Any, token_for: Callable[..., str], bearer: Callable[[str], dict[str, str]], client: Any
) -> None:
    auth = bearer(token_for(alice))
    with time_machine.travel(JAN, tick=False):
        saved = client.post(
            "/api/v1/memories",
            {"content": "The release train leaves every second Thursday", "kind": "fact"},
            content_type="application/json",
            **auth,
        ).json()
    with time_machine.travel(MAR, tick=False):
        client.post(
            f"/api/v1/memories/{saved['memory']['id']}/update",
            {"content": "The release train leaves every Monday now"},
            content_type="application/json",
            **auth,
        )

    today = client.get("/api/v1/search", {"query": "release train"}, **auth).json()
    then = client.get("/api/v1/search", {"query": "release train", "known_at": "2026-02-01T00:00:00Z"}, **auth).json()

    assert today["view"] == "current" and today["hits"][0]["memory"]["content"].endswith("Monday now")
    assert then["view"] == "as known at 2026-02-01T00:00:00+00:00 (record time)"
    assert [h["memory"]["content"] for h in then["hits"]] == ["The release train leaves every second Thursday"]
    assert then["hits"][0]["facts"] == []
