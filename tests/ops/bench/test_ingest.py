"""`atrium bench ingest --turns N --json`: the report's shape and that its figures come from a real run (no timing
asserts: speed is measured by the command, never asserted in the suite)."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from capture.models import BackfillRun
from memory.models import Memory
from ops.bench import synthetic_sessions


def test_the_synthetic_sessions_hold_exactly_the_work_turns_asked_for() -> None:
    sessions = synthetic_sessions(turns=23)
    work = [t for s in sessions for t in s.turns if t.role in ("user", "assistant")]
    assert len(work) == 23 and len(sessions) == 3
    assert any(t.role == "tool" and not t.text and t.tool for s in sessions for t in s.turns)  # tools ride along
    assert len({t.text for t in work}) > 15  # turns differ, so the pipeline does not merge them all


def test_bench_ingest_reports_throughput_against_the_embedder_alone_and_leaves_nothing(db: Any) -> None:
    out = StringIO()
    call_command("bench", "ingest", "--turns", "12", "--json", stdout=out, stderr=StringIO())
    data = json.loads(out.getvalue())

    assert (data["turns"], data["turns_done"], data["state"]) == (12, 12, "done")
    assert data["skipped"] == {"light mode keeps user turns only": 6}  # the assistant turns
    assert data["texts_embedded"] >= 6 and data["embed_calls"] >= 1  # an episode per user turn, at least
    assert data["texts_per_turn"] == round(data["texts_embedded"] / 12, 3)
    assert data["memories"] >= 6
    for key in ("turns_per_second", "limit_turns_per_second", "share_of_limit", "share_in_run", "seconds"):
        assert isinstance(data[key], float) and data[key] > 0
    assert data["share_of_limit"] == pytest.approx(data["turns_per_second"] / data["limit_turns_per_second"], 0.01)
    assert 0 < data["share_in_run"] < 1 and data["embed_seconds_in_run"] < data["seconds"]
    assert data["goal_share_of_limit"] == 0.75
    assert data["ten_thousand_turns"].startswith("10,000 turns take about ")
    assert data["embedder"]
    assert not BackfillRun.objects.exists() and not Memory.objects.exists()  # rolled back


def test_bench_ingest_refuses_a_turn_count_out_of_range(db: Any) -> None:
    with pytest.raises(CommandError, match="--turns must be between 1 and 5,000"):
        call_command("bench", "ingest", "--turns", "0", "--json", stdout=StringIO())
