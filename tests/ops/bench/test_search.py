"""`atrium bench search --json` at a small size: every figure the issue asks for is there and sane, the palaces are
built as asked (stored rows counted while the bench runs), and nothing of the bench is left afterwards. Speed is
measured by the command, never asserted here."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db.models import Count

from memory.models import AccessRecord, Memory
from ops.management.commands.bench import Command
from palace.models import Membership, Palace

LATENCIES = ("search_ms", "search_total_ms", "search_filtered_ms", "search_filtered_total_ms", "save_ms")


def _sane(figures: dict[str, float], n: int) -> None:
    assert figures["n"] == n
    assert 0 < figures["p50"] <= figures["p95"] <= figures["p99"]


def test_bench_search_reports_every_figure_and_leaves_nothing(db: Any, monkeypatch: Any) -> None:
    from ops.bench import search as bench

    before = (Palace.objects.count(), Membership.objects.count(), get_user_model().objects.count())
    seen: dict[str, Any] = {}
    real_sizes = bench.sizes

    def sizes_and_rows() -> dict[str, Any]:  # runs once, right after the load
        seen["rows"] = sorted(
            Memory.objects.values("palace_id").annotate(n=Count("id")).values_list("n", flat=True), reverse=True
        )
        return real_sizes()

    monkeypatch.setattr(bench, "sizes", sizes_and_rows)
    out = StringIO()
    call_command(
        "bench", "search", "--memories", "300", "--palaces", "5", "--recall-sample", "10", "--queries", "6",
        "--saves", "3", "--ef-sweep", "40", "--json", stdout=out, stderr=StringIO(),
    )  # fmt: skip
    data = json.loads(out.getvalue())

    assert seen["rows"] == [300, 30, 30, 30, 30, 30]  # the big palace and five small ones, loaded for real
    assert data["palaces"] == {
        "big": 1,
        "small": 5,
        "big_palace_memories": 300,
        "small_palaces_memories": 150,
        "member_reads": 3,
        "member_reads_memories": 90,
    }
    for key in LATENCIES:
        _sane(data[key], 3 if key == "save_ms" else 6)
    assert data["search_modes"] == {"hybrid": 6}
    for key in ("vector_recall", "vector_recall_filtered"):
        assert 0 <= data[key] <= 1
    assert data["vector_recall_on"].startswith("synthetic vectors (ops.bench.synthetic), far harder")  # labelled
    assert data["recall_detail"]["owner"]["queries"] == data["recall_detail"]["member"]["queries"] == 10
    sweep = data["recall_detail"]["owner"]["by_ef_search"]
    assert set(sweep) == {"100", "40"} and sweep["100"]["recall"] == data["vector_recall"]
    assert all(0 <= v["recall"] <= 1 and v["vector_statement_ms"]["n"] == 10 for v in sweep.values())
    assert data["load_seconds"] > 0 and data["load_rows_per_second"] > 0
    assert data["index_build_seconds"] == {"total": 0}  # below REBUILD_AT nothing is dropped or rebuilt
    # the table and both search indexes read into shared buffers (pg_prewarm, installed by ops/embedded.py)
    assert list(data["prewarm"]) == ["memory_memory", "memory_search_gin", "memory_embedding_hnsw"]
    assert all(v["blocks"] > 0 and v["seconds"] >= 0 for v in data["prewarm"].values())
    assert data["table_bytes"] > 0 and data["index_bytes"]["total"] >= data["index_bytes"]["memory_embedding_hnsw"] > 0
    assert data["vector_arm_settings"]["hnsw.iterative_scan"] == "relaxed_order"
    memory = data["resident_memory"]
    assert (
        memory["this_process_rss_bytes"] > 0 and memory["postgres_rss_bytes"] > 0 and memory["postgres_processes"] > 1
    )
    assert len(data["load_average_before"]) == len(data["load_average_after"]) == 3
    assert data["cleanup_seconds"] >= 0
    text = StringIO()
    Command(stdout=text)._print_search(data)  # the command's text output of the same report
    recall_line = next(line for line in text.getvalue().splitlines() if line.startswith("vector recall@10"))
    assert f"{data['vector_recall']} (owner)" in recall_line
    assert f"on {data['vector_recall_on']}" in text.getvalue()  # the recall says what it was measured on

    assert not Memory.objects.exists() and not AccessRecord.objects.exists()
    assert not get_user_model().objects.filter(username__startswith="bench-").exists()
    assert (Palace.objects.count(), Membership.objects.count(), get_user_model().objects.count()) == before


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--palaces", "0"], "--palaces must be between 1 and 10,000"),
        (["--ef-sweep", "40,lots"], "--ef-sweep takes whole numbers"),
        (["--ef-sweep", "2000"], "--ef-sweep values must be between 1 and 1,000"),
        (["--recall-sample", "0"], "--recall-sample must be positive"),
    ],
)
def test_bench_search_refuses_bad_options_with_a_message(db: Any, option: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("bench", "search", "--memories", "10", *option, "--json", stdout=StringIO())


def test_prewarm_says_when_pg_prewarm_is_missing(db: Any) -> None:
    """On a server without the extension (an external PostgreSQL) the bench says so instead of failing."""
    from django.db import connection

    from ops.bench.load import prewarm

    assert prewarm(lambda _line: None)["memory_embedding_hnsw"]["blocks"] > 0  # control: installed here

    def without(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "to_regproc('pg_prewarm')" in sql:
            sql = "SELECT false"
        return execute(sql, params, many, context)

    with connection.execute_wrapper(without):
        missing = prewarm(lambda _line: None)
    assert missing == {"unavailable": "the pg_prewarm extension is not installed in this database"}
