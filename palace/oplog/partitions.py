"""The op log's time partitions (migration palace 0008): one per calendar month (UTC) of `created_at`, named
`palace_oplog_pYYYY_MM`, and `palace_oplog_default` for a row no month's partition takes.

The history of changes is never pruned (only access records and evidence batches age out, memory/jobs/retention.py
and memory.search); a month that is over becomes a partition nobody writes again. Every reader keeps reading the
parent table, so the Log, the audit console, a memory's history, restore and export see all months alike.

- `oplog_partitions_ensure` creates the partitions of this month and the next AHEAD_MONTHS (or of any month from
  `since`), one SQL call each (`atrium_oplog_partition`, idempotent); the daily beat task calls it (ops/tasks.py). A
  month whose rows already went to the DEFAULT partition (the task did not run for months) is answered "held":
  its rows stay readable there, and the month keeps no partition of its own.
- `oplog_partitions` lists them with PostgreSQL's row estimate and their size on disk (for an operator in `atrium
  shell`; tests/palace/test_oplog_partitions.py reads the layout through it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from django.db import DEFAULT_DB_ALIAS, connection, connections

PARENT = "palace_oplog"
AHEAD_MONTHS = 3


@dataclass(frozen=True)
class Partition:
    name: str
    bounds: str  # PostgreSQL's own words: "FOR VALUES FROM (…) TO (…)" or "DEFAULT"
    rows_estimate: int  # pg_class.reltuples (ANALYZE and autovacuum keep it); 0 before the first
    bytes: int  # heap, TOAST and indexes


def _months(since: date, until: date) -> list[date]:
    months, month = [], since.replace(day=1)
    while month <= until:
        months.append(month)
        month = month.replace(year=month.year + (month.month == 12), month=month.month % 12 + 1)
    return months


def oplog_partitions_ensure(*, since: date | None = None, ahead: int = AHEAD_MONTHS) -> dict[str, str]:
    """Each month from `since` (default: this one) to AHEAD_MONTHS after this one: "created", "exists" or "held"
    (its rows are in the DEFAULT partition), keyed "YYYY-MM"."""
    today = datetime.now(UTC).date()
    last = _months(today, today.replace(year=today.year + 1))[min(max(ahead, 0), 12)]
    answers: dict[str, str] = {}
    with connection.cursor() as cursor:
        for month in _months(min(since or today, today), last):
            cursor.execute("SELECT atrium_oplog_partition(%s)", [month])
            row = cursor.fetchone()
            answers[month.strftime("%Y-%m")] = str(row[0]) if row else "unknown"
    return answers


def oplog_partitions() -> list[Partition]:
    """The partitions of the op log, oldest first, the DEFAULT one last."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid), greatest(c.reltuples, 0)::bigint,"
            " pg_total_relation_size(c.oid)"
            " FROM pg_partition_tree(%s::regclass) t JOIN pg_class c ON c.oid = t.relid"
            " WHERE t.isleaf ORDER BY c.relname = %s, c.relname",
            [PARENT, f"{PARENT}_default"],
        )
        return [Partition(str(n), str(b), int(r), int(s)) for n, b, r, s in cursor.fetchall()]


def oplog_rows_estimate(using: str = DEFAULT_DB_ALIAS) -> int:
    """PostgreSQL's estimate of the op log's rows: the sum over its partitions (a partitioned table's own
    reltuples is not kept by autovacuum)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(greatest(c.reltuples, 0)), 0)::bigint"
            " FROM pg_partition_tree(%s::regclass) t JOIN pg_class c ON c.oid = t.relid WHERE t.isleaf",
            [PARENT],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0
