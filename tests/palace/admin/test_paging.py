"""The audit console's paging at a year's size (palace/admin/paging.py): the drill-down's periods equal what the
admin's own DISTINCT finds, without it; the unfiltered count is PostgreSQL's estimate past a threshold and exact
below it and under any filter."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from palace.actors import Actor
from palace.admin import paging
from palace.admin.paging import LedgerPaginator, LedgerQuerySet
from palace.models import OpLog, Palace
from palace.oplog import oplog_write
from palace.rls import acting_as_system

MOMENTS = [
    datetime(2025, 2, 27, 23, 30, tzinfo=UTC),
    datetime(2025, 12, 31, 23, 59, tzinfo=UTC),
    datetime(2026, 1, 1, 0, 1, tzinfo=UTC),
    datetime(2026, 3, 5, 12, tzinfo=UTC),
    datetime(2026, 3, 7, 8, tzinfo=UTC),
]


@pytest.fixture
def rows(alice: Any) -> Palace:
    palace = Palace.objects.get(personal_owner=alice)
    for moment in MOMENTS:
        with time_machine.travel(moment, tick=False), transaction.atomic():
            oplog_write(op="memory.save", actor=Actor.for_user(alice), palace=palace, target_kind="memory")
    return palace


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_drill_down_periods_equal_the_admins_distinct(rows: Palace, zone: str, settings: Any) -> None:
    settings.TIME_ZONE = zone
    with acting_as_system("test: console drill-down"):
        ours = LedgerQuerySet(model=OpLog).filter(palace=rows)
        stock = OpLog.objects.filter(palace=rows)
        for kind in ("year", "month", "day"):
            assert list(ours.datetimes("created_at", kind)) == list(stock.datetimes("created_at", kind)), kind
        march = {
            "created_at__gte": datetime(2026, 3, 1, tzinfo=UTC),
            "created_at__lt": datetime(2026, 4, 1, tzinfo=UTC),
        }
        days = list(ours.filter(**march).datetimes("created_at", "day"))
        assert [d.day for d in days] == [5, 7] and days == list(stock.filter(**march).datetimes("created_at", "day"))
        with CaptureQueriesContext(connection) as seen:
            list(ours.datetimes("created_at", "year"))
        assert not any("DISTINCT" in q["sql"] for q in seen.captured_queries)
        assert LedgerQuerySet(model=OpLog).filter(pk=-1).datetimes("created_at", "year") == []


def test_unfiltered_count_is_the_estimate_past_the_threshold(rows: Palace, monkeypatch: Any) -> None:
    with acting_as_system("test: console count"), connection.cursor() as cursor:
        cursor.execute("ANALYZE palace_oplog")
        cursor.execute(  # the op log is partitioned by month (palace 0008): the estimate is its partitions' sum
            "SELECT sum(greatest(c.reltuples, 0))::bigint FROM pg_partition_tree('palace_oplog') t"
            " JOIN pg_class c ON c.oid = t.relid WHERE t.isleaf"
        )
        estimate = cursor.fetchone()[0]
        assert estimate > 0
        exact = OpLog.objects.count()
        # Below the threshold (the default, 100,000): the exact count, by COUNT(*).
        with CaptureQueriesContext(connection) as seen:
            assert LedgerPaginator(OpLog.objects.order_by("-pk"), 100).count == exact
        assert any("COUNT(*)" in q["sql"] for q in seen.captured_queries)
        monkeypatch.setattr(paging, "ESTIMATE_FROM", 0)
        with CaptureQueriesContext(connection) as seen:
            assert LedgerPaginator(OpLog.objects.order_by("-pk"), 100).count == estimate
        assert not any("COUNT(*)" in q["sql"] for q in seen.captured_queries)
        filtered = OpLog.objects.filter(palace=rows, op="memory.save").order_by("-pk")
        assert LedgerPaginator(filtered, 100).count == len(MOMENTS)  # a filter: exact whatever the threshold


def test_the_console_says_when_its_total_is_an_estimate(rows: Palace, make_user: Any, monkeypatch: Any) -> None:
    from django.test import Client

    client = Client()
    client.force_login(make_user("root", admin=True))
    with acting_as_system("test: console count"), connection.cursor() as cursor:
        cursor.execute("ANALYZE palace_oplog")
    note = 'class="paginator count-estimate"'

    exact = client.get("/admin/palace/oplog/")  # the control: below the threshold the count is exact, unlabelled
    assert exact.status_code == 200 and note not in exact.content.decode()

    monkeypatch.setattr(paging, "ESTIMATE_FROM", 0)
    estimated = client.get("/admin/palace/oplog/")
    assert estimated.status_code == 200 and note in estimated.content.decode()
    filtered = client.get("/admin/palace/oplog/", {"op": "memory.save"})  # a filter counts exactly
    assert filtered.status_code == 200 and note not in filtered.content.decode()
