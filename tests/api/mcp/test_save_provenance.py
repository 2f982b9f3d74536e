"""memory_save's `session`, `turn` and `occurred_at`: agent-saved episodes group by session and carry when they
happened, as REST saves do (source_session, source_turn, occurred_at); a bad value is a tool error naming the
argument, and nothing is stored."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memory.models import Memory
from tests.api.mcp.conftest import call_each, run, text_of

SESSION = "claude-code:7f3c2a"


def _saved_ids(result: Any) -> list[int]:
    assert not result.is_error, text_of(result)
    return [int(item["id"]) for item in result.structured_content["items"]]


def test_session_turn_and_occurred_at_are_stored_with_the_memory(tokens: dict[str, str]) -> None:
    one, batch, plain = run(
        call_each(
            tokens["alice"],
            [
                (
                    "memory_save",
                    {
                        "content": "We moved the nightly build from Jenkins to GitHub Actions.",
                        "kind": "episode",
                        "session": SESSION,
                        "turn": 3,
                        "occurred_at": "2026-03-02T14:05:00+01:00",
                    },
                ),
                (
                    "memory_save",
                    {
                        "items": [
                            {"content": "The staging database was restored from Sunday's backup.", "kind": "episode"},
                            {
                                "content": "Carol approved the schema change for the orders table.",
                                "kind": "decision",
                                "turn": "4b",
                                "occurred_at": "2026-03-02T15:30:00Z",
                            },
                        ],
                        "session": SESSION,
                        "turn": 4,
                        "occurred_at": "2026-03-02T15:00:00Z",
                    },
                ),
                ("memory_save", {"content": "The office closes early on Fridays.", "kind": "fact"}),
            ],
        )
    )
    (first,) = Memory.objects.filter(pk__in=_saved_ids(one))
    assert (first.source_session, first.source_turn) == (SESSION, "3")
    assert first.occurred_at == datetime(2026, 3, 2, 13, 5, tzinfo=UTC)
    assert first.source_kind == "mcp"

    inherited, own = (Memory.objects.get(pk=pk) for pk in _saved_ids(batch))
    assert (inherited.source_session, inherited.source_turn) == (SESSION, "4")
    assert inherited.occurred_at == datetime(2026, 3, 2, 15, 0, tzinfo=UTC)
    assert (own.source_session, own.source_turn) == (SESSION, "4b")  # an item's own turn and time win
    assert own.occurred_at == datetime(2026, 3, 2, 15, 30, tzinfo=UTC)

    # Control: without them, no session and the time it was saved (not a date in 2026-03).
    (unset,) = Memory.objects.filter(pk__in=_saved_ids(plain))
    assert (unset.source_session, unset.source_turn) == ("", "")
    assert unset.occurred_at.date() != first.occurred_at.date()
    assert abs((unset.occurred_at - unset.created_at).total_seconds()) < 3600


def test_a_bad_occurred_at_or_session_is_a_tool_error_naming_the_argument(tokens: dict[str, str]) -> None:
    before = Memory.objects.count()
    bad_time, no_offset_ok, long_session, bad_item_time = run(
        call_each(
            tokens["alice"],
            [
                ("memory_save", {"content": "Deploy froze at noon.", "kind": "episode", "occurred_at": "yesterday"}),
                ("memory_save", {"content": "Deploy resumed at one.", "kind": "episode", "occurred_at": "2026-03-02"}),
                ("memory_save", {"content": "Deploy froze again.", "kind": "episode", "session": "s" * 201}),
                (
                    "memory_save",
                    {"items": [{"content": "Rollback at two.", "kind": "episode", "occurred_at": "2026-13-40"}]},
                ),
            ],
        )
    )
    for result, name in ((bad_time, "occurred_at"), (long_session, "session"), (bad_item_time, "occurred_at")):
        assert result.is_error, text_of(result)
        assert name in text_of(result), text_of(result)
    # Positive control: a plain ISO 8601 date is accepted (and stored as that day).
    assert not no_offset_ok.is_error, text_of(no_offset_ok)
    assert Memory.objects.count() == before + 1
    assert Memory.objects.get(content__startswith="Deploy resumed").occurred_at.date().isoformat() == "2026-03-02"
