"""What the search bench reads besides latencies: percentiles, the table's and indexes' sizes, resident memory of
the PostgreSQL server and of this process, how often the HNSW index was used, what a commit costs."""

from __future__ import annotations

import math
import os
import statistics
import time
from typing import Any

from django.db import connection, transaction

HNSW_INDEX = "memory_embedding_hnsw"


def percentiles(samples: list[float]) -> dict[str, float | int | None]:
    """p50/p95/p99 and mean of `samples` in the bench's rounding; with no samples each figure is null (unknown)."""
    if not samples:
        return {"p50": None, "p95": None, "p99": None, "mean": None, "n": 0}
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)], 2)

    return {
        "p50": pick(0.50),
        "p95": pick(0.95),
        "p99": pick(0.99),
        "mean": round(statistics.fmean(samples), 2),
        "n": len(samples),
    }


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def commit_ms() -> float:
    """What committing one small row costs here (the bench's saves are measured without their commit)."""
    samples = []
    for _ in range(5):
        started = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT txid_current()")  # takes a transaction id: its commit is flushed to the WAL
        samples.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(samples), 2)


def sizes() -> dict[str, Any]:
    """memory_memory's size on disk (heap + TOAST), all its indexes, and each index, in bytes."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_table_size('memory_memory'), pg_indexes_size('memory_memory'),"
            " (SELECT reltuples::bigint FROM pg_class WHERE relname = 'memory_memory')"
        )
        table, indexes, rows = cursor.fetchone() or (0, 0, 0)
        cursor.execute(
            "SELECT indexrelname, pg_relation_size(indexrelid) FROM pg_stat_user_indexes"
            " WHERE relname = 'memory_memory' ORDER BY 2 DESC"
        )
        each = {str(name): int(size) for name, size in cursor.fetchall()}
    return {"table_bytes": int(table), "index_bytes": {"total": int(indexes), **each}, "table_rows_estimate": rows}


def hnsw_scans() -> int:
    """How many scans of the HNSW index the server has counted (this session's own counts flushed first)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
    with connection.cursor() as cursor:  # a new statement: the flush happens when the previous one ends
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = %s", [HNSW_INDEX])
        row = cursor.fetchone()
    return int(row[0]) if row else -1


def resident_memory() -> dict[str, Any]:
    """RSS of this process and of the PostgreSQL server (postmaster and every child), in bytes. A server process's
    RSS counts the shared buffers it has touched, so their sum overcounts: `postgres_pss_bytes` shares each page
    among the processes mapping it (Linux), the figure that adds up; -1 where the system does not say."""
    import psutil

    me = psutil.Process()
    out: dict[str, Any] = {"this_process_rss_bytes": me.memory_info().rss}
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid(), current_setting('shared_buffers')")
        backend, shared_buffers = cursor.fetchone() or (0, "")
    out["postgres_shared_buffers"] = str(shared_buffers)
    try:
        postmaster = psutil.Process(int(backend)).parent()
        # A server on another host (DATABASE_URL): the pid means nothing here.
        if postmaster is None or "postgres" not in postmaster.name():
            raise psutil.NoSuchProcess(int(backend))
        server = [postmaster, *postmaster.children()]
        out["postgres_processes"] = len(server)
        out["postgres_rss_bytes"] = sum(p.memory_info().rss for p in server)
    except psutil.Error:
        out["postgres_processes"] = out["postgres_rss_bytes"] = -1
        return out
    try:
        out["postgres_pss_bytes"] = sum(p.memory_full_info().pss for p in server)
    except (psutil.Error, AttributeError):
        out["postgres_pss_bytes"] = -1
    return out
