"""Dates without a time zone through the MCP door (issue 26): a bare date is the start of that day in the server's
time zone, a naive time likewise, the result says which zone it assumed, and text that is no date is a tool error
naming the argument. The REST door's twin is tests/api/test_dates_api.py."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memory.models import Memory
from tests.api.mcp.conftest import call_each, run, text_of

BERLIN = "Europe/Berlin"


@pytest.fixture
def lisbon(tokens: dict[str, str], settings: Any) -> str:
    """A fact true from 2023-12-31 23:30 UTC, i.e. 00:30 on 1 January in Berlin (the server's zone here)."""
    settings.TIME_ZONE = BERLIN
    fact = {"entity": "Maria", "content": "Maria lives in Lisbon", "valid_from": "2023-12-31T23:30:00Z"}
    [written] = run(call_each(tokens["alice"], [("memory_facts", {"facts": [fact]})]))
    assert not written.is_error, text_of(written)
    return tokens["alice"]


def _contents(result: Any) -> list[str]:
    assert not result.is_error, text_of(result)
    return [f["content"] for f in result.structured_content["facts"]]


def test_a_bare_date_or_a_naive_time_is_read_in_the_servers_time_zone(lisbon: str) -> None:
    day, after, aware = run(
        call_each(
            lisbon,
            [
                ("memory_facts", {"entity": "Maria", "as_of": "2024-01-01"}),  # 23:00 UTC on 31 Dec: not yet
                ("memory_facts", {"entity": "Maria", "as_of": "2024-01-01T01:00:00"}),  # 00:00 UTC: true
                ("memory_facts", {"entity": "Maria", "as_of": "2024-01-01T00:00:00Z"}),  # carries its zone
            ],
        )
    )
    assert _contents(day) == [] and _contents(after) == ["Maria lives in Lisbon"] == _contents(aware)
    assert day.structured_content["asOf"].startswith("2023-12-31T23:00:00")
    note = day.structured_content["timeZoneNote"]
    assert note == f"as_of had no time zone: read in {BERLIN} (the server's time zone)"
    assert note in text_of(day)
    assert aware.structured_content["timeZoneNote"] is None and "time zone" not in text_of(aware)


def test_search_takes_a_bare_date_and_says_which_zone(lisbon: str) -> None:
    [found] = run(
        call_each(
            lisbon, [("memory_search", {"query": "Maria", "as_of": "2026-06-01T00:00:00", "known_at": "2026-06-01"})]
        )
    )
    assert not found.is_error, text_of(found)
    assert found.structured_content["timeZoneNote"] == (
        f"as_of, known_at had no time zone: read in {BERLIN} (the server's time zone)"
    )
    assert found.structured_content["asOf"].startswith("2026-05-31T22:00:00")  # summer time: UTC+2


@pytest.mark.parametrize("value", ["yesterday", "2024-13-01", "2024-02-30", "01/02/2024"])
def test_text_that_is_no_date_is_a_tool_error_naming_the_argument(lisbon: str, value: str) -> None:
    refused, control = run(
        call_each(
            lisbon,
            [
                ("memory_facts", {"entity": "Maria", "as_of": value}),
                ("memory_facts", {"entity": "Maria", "as_of": "2024-06-01"}),
            ],
        )
    )
    assert refused.is_error
    message = text_of(refused)
    assert "as_of" in message and "ISO 8601" in message and value in message, message
    assert _contents(control) == ["Maria lives in Lisbon"]  # positive control: a date the rule reads


def test_a_save_with_a_bare_date_is_stored_at_that_days_start_and_says_so(lisbon: str) -> None:
    [saved] = run(
        call_each(
            lisbon,
            [
                (
                    "memory_save",
                    {
                        "content": "The Lisbon office opened its new lab.",
                        "kind": "episode",
                        "occurred_at": "2024-07-01",
                    },
                )
            ],
        )
    )
    assert not saved.is_error, text_of(saved)
    note = saved.structured_content["timeZoneNote"]
    assert note == f"occurred_at had no time zone: read in {BERLIN} (the server's time zone)" and note in text_of(saved)
    stored = Memory.objects.get(pk=saved.structured_content["items"][0]["id"])
    assert stored.occurred_at == datetime(2024, 6, 30, 22, 0, tzinfo=UTC)  # midnight in Berlin's summer
