"""Dates without a time zone through the REST door (issue 26): `/api/v1/facts` and `/api/v1/search` read a bare
date as the start of that day in the server's time zone and a naive time likewise, say which zone they assumed,
and answer text that is no date with a 422 naming the argument (was a 500: naive compared with aware)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from memory.models import Memory

BERLIN = "Europe/Berlin"


@pytest.fixture
def client(alice: Any, client_for: Callable[[Any], Any], settings: Any) -> Any:
    settings.TIME_ZONE = BERLIN
    client = client_for(alice)
    fact = {"entity": "Maria", "content": "Maria lives in Lisbon", "valid_from": "2023-12-31T23:30:00Z"}
    written = client.post("/api/v1/facts", {"facts": [fact]}, content_type="application/json")
    assert written.status_code == 200 and written.json()["written"], written.content
    return client


def _contents(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [f["content"] for f in response.json()["facts"]]


def test_a_bare_date_or_a_naive_time_is_read_in_the_servers_time_zone(client: Any) -> None:
    day = client.get("/api/v1/facts", {"entity": "Maria", "as_of": "2024-01-01"})
    after = client.get("/api/v1/facts", {"entity": "Maria", "as_of": "2024-01-01T01:00:00"})
    aware = client.get("/api/v1/facts", {"entity": "Maria", "as_of": "2024-01-01T00:00:00Z"})
    assert _contents(day) == [] and _contents(after) == ["Maria lives in Lisbon"] == _contents(aware)
    assert day.json()["as_of"].startswith("2023-12-31T23:00:00")
    assert day.json()["time_zone_note"] == f"as_of had no time zone: read in {BERLIN} (the server's time zone)"
    assert aware.json()["time_zone_note"] is None


@pytest.mark.parametrize("method", ["get", "post"])
def test_search_takes_a_bare_date_and_says_which_zone(client: Any, method: str) -> None:
    params = {"query": "Maria", "as_of": "2026-06-01", "known_at": "2026-06-01T12:00:00"}
    call = client.get if method == "get" else client.post
    kwargs = {} if method == "get" else {"content_type": "application/json"}
    found = call("/api/v1/search", params, **kwargs)
    assert found.status_code == 200, found.content
    assert found.json()["time_zone_note"] == (
        f"as_of, known_at had no time zone: read in {BERLIN} (the server's time zone)"
    )
    assert found.json()["as_of"].startswith("2026-05-31T22:00:00")


@pytest.mark.parametrize("path", ["/api/v1/facts", "/api/v1/search"])
@pytest.mark.parametrize("value", ["yesterday", "2024-13-01", "01/02/2024"])
def test_text_that_is_no_date_is_a_422_naming_the_argument(client: Any, path: str, value: str) -> None:
    params = {"entity": "Maria", "query": "Maria"}
    refused = client.get(path, {**params, "as_of": value})
    assert refused.status_code == 422, refused.content
    message = refused.json()["error"]["message"]
    assert "as_of" in message and "ISO 8601" in message, message
    assert client.get(path, {**params, "as_of": "2024-06-01"}).status_code == 200  # positive control


def test_a_save_with_a_naive_occurred_at_is_stored_in_the_servers_zone_and_says_so(client: Any) -> None:
    saved = client.post(
        "/api/v1/memories",
        {"content": "The Lisbon office opened its new lab.", "kind": "episode", "occurred_at": "2024-07-01T09:00:00"},
        content_type="application/json",
    )
    assert saved.status_code == 201, saved.content
    assert saved.json()["time_zone_note"] == f"occurred_at had no time zone: read in {BERLIN} (the server's time zone)"
    stored = Memory.objects.get(pk=saved.json()["memory"]["id"])
    assert stored.occurred_at == datetime(2024, 7, 1, 7, 0, tzinfo=UTC)  # 09:00 in Berlin's summer is 07:00 UTC
    batch = client.post(
        "/api/v1/memories",
        {"items": [{"content": "The Porto office moved floors.", "kind": "episode", "occurred_at": "2024-07-02"}]},
        content_type="application/json",
    )
    assert batch.status_code == 200 and batch.json()["time_zone_note"].startswith("items[0].occurred_at had no")
    aware = client.post(
        "/api/v1/memories",
        {"content": "The Faro office got a new printer.", "kind": "episode", "occurred_at": "2024-07-01T09:00:00Z"},
        content_type="application/json",
    )
    assert aware.status_code == 201 and aware.json()["time_zone_note"] is None  # control: it carried its zone
