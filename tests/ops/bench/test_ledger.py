"""`atrium bench ledger --people 3 --days 10 --json`: every figure present and sane, the loaded rows look like real
ones (the Log page and the audit console render them), and no bench row is left afterwards. Speed is measured by
the command, never asserted here."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client

from memory.models import AccessRecord, Adjudication, Memory, SearchBatch
from ops.bench import ledger
from palace.models import OpLog, Palace
from palace.rls import acting_as_system


def _counts() -> dict[str, int]:
    with acting_as_system("test: count every row"):
        return {
            "oplog": OpLog.objects.count(),
            "access": AccessRecord.objects.count(),
            "batches": SearchBatch.objects.count(),
            "rulings": Adjudication.objects.count(),
            "memories": Memory.objects.count(),
            "palaces": Palace.objects.count(),
            "users": get_user_model().objects.count(),
        }


def test_working_days_are_monday_to_friday_before_today() -> None:
    days = ledger.working_days(days=14, now=datetime(2026, 12, 6, 12, tzinfo=UTC))  # a Sunday
    assert len(days) == 10
    weekdays = {d.astype(datetime).weekday() for d in days}
    assert weekdays == {0, 1, 2, 3, 4}
    assert days.max() < np.datetime64("2026-12-06")


def test_bench_ledger_reports_every_figure_and_leaves_no_row(db: Any) -> None:
    before = _counts()
    out = StringIO()
    call_command("bench", "ledger", "--people", "3", "--days", "10", "--json", stdout=out, stderr=StringIO())
    data = json.loads(out.getvalue())

    w = data["working_days"]
    assert 6 <= w <= 8  # 10 calendar days hold 6 to 8 working days
    rows = data["rows"]
    per_day = ledger.TURNS + ledger.SAVES + ledger.CORRECTIONS + ledger.GRADES
    assert rows["palace_oplog"] == 3 * w * per_day
    assert rows["memory_memory"] == 3 * w * (ledger.SAVES + ledger.CORRECTIONS)
    assert rows["memory_accessrecord"] == 3 * w * ledger.SEARCHES * ledger.HITS
    assert rows["memory_adjudication"] == 3 * w
    assert rows["memory_searchbatch"] == 3 * ledger.BATCHES_KEPT
    # The sizes are reported (positive, per table); whether a table grows depends on the free space earlier tests
    # left in it (PostgreSQL reuses it), so growth is not asserted: the row counts above prove the load.
    for table in ledger.TABLES:
        assert data["table_bytes"][table] > 0 and data["table_bytes_before"][table] > 0, table
    assert data["load_seconds"] > 0 and data["repetitions"] == 30
    for key in ("log_first_page_ms", "log_category_ms", "log_op_prefix_ms", "log_deep_page_ms", "console_ms",
                "console_filtered_ms", "history_ms"):  # fmt: skip
        figures = data[key]
        assert figures["n"] == 30 and 0 < figures["p50"] <= figures["p95"] <= figures["p99"], key
    assert data["history_access_records"] > 3 * w * ledger.SEARCHES * ledger.HITS * ledger.HOT_SHARE / 3 / 2
    assert data["prune"]["keep_days"] == 180 and data["prune"]["deleted"] == 0  # nothing is 180 days old
    assert len(data["load_average_before"]) == 3 and len(data["load_average_after"]) == 3
    assert _counts() == before


def test_bench_ledger_rows_render_on_the_log_page_and_prune_counts_old_ones(db: Any) -> None:
    """The generated rows as the panel and the console read them (a positive control for the cleanup test above:
    here the rows are looked at while they exist)."""
    bench = ledger.Bench()
    midnights = ledger.working_days(days=200, now=datetime.now(UTC))
    with acting_as_system("test: load"):
        ledger._setup(bench, people=1, tag="t-ledger")
        ledger._load_person(np.random.default_rng(1), bench.people[0], midnights, bench)
    person = bench.people[0]
    client = Client()
    client.force_login(person.user)
    page = client.get("/log/")
    assert page.status_code == 200
    assert b"capture" in page.content.lower() or b"turn" in page.content.lower()
    staff = Client()
    staff.force_login(bench.staff)
    console = staff.get("/admin/palace/oplog/")
    assert console.status_code == 200 and b"memory.update" in console.content
    with acting_as_system("test: read"):
        ops = set(OpLog.objects.filter(palace_id=person.personal.pk).values_list("op", flat=True))
        assert {"capture.turn", "memory.save", "memory.update", "review.grade"} <= ops
        ids = list(OpLog.objects.filter(actor_user=person.user).order_by("id").values_list("created_at", flat=True))
        assert ids == sorted(ids)  # ids follow time, as real rows do
        superseded = Memory.objects.filter(palace__in=[person.personal, *person.projects], status="superseded")
        assert superseded.count() == len(midnights) * ledger.CORRECTIONS
        cutoff = datetime.now(UTC) - timedelta(days=180)
        assert AccessRecord.objects.filter(user=person.user, created_at__lt=cutoff).exists()
    ledger._cleanup(bench)
    with acting_as_system("test: read"):
        assert not OpLog.objects.filter(actor_user_id=person.user.pk).exists()
        assert not AccessRecord.objects.filter(user_id=person.user.pk).exists()


def test_bench_ledger_refuses_sizes_out_of_range(db: Any) -> None:
    with pytest.raises(CommandError, match="--people"):
        call_command("bench", "ledger", "--people", "0", "--json", stdout=StringIO())
