"""The op log in monthly time partitions (palace 0008, palace/oplog/partitions.py): rows go to their month's
partition, every reader still reads them through the parent (the Log's selector, the panel's Log page, the audit
console) with the same row-level security, a partition read directly shows only what the parent would (pg_dump reads
partitions directly: tests/ops/test_backup.py restores every op row), the append-only trigger holds on every
partition, and the daily task keeps the next months ready."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest
import time_machine
from django.db import connection, transaction
from django.db.utils import DatabaseError
from django.test import Client
from django_celery_beat.models import PeriodicTask

from ops.tasks import PARTITIONS_TASK, oplog_partitions_task
from palace.actors import Actor
from palace.models import OpLog, Palace
from palace.oplog import oplog_partitions, oplog_partitions_ensure, oplog_rows_estimate, oplog_write
from palace.rls import acting_as
from palace.selectors import oplog_page
from palace.sequences import sequence_ids

OLD_MONTH = datetime(2024, 5, 14, 9, 30, tzinfo=UTC)
OLD_PARTITION = "palace_oplog_p2024_05"


def _one(sql: str, params: list[Any] | None = None) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        row = cursor.fetchone()
    return row[0] if row else None


def _partition_of(row_id: int) -> str:
    return str(_one("SELECT tableoid::regclass::text FROM palace_oplog WHERE id = %s", [row_id]))


def _write_old(palace: Palace, user: Any, reason: str) -> OpLog:
    with time_machine.travel(OLD_MONTH, tick=False), transaction.atomic():
        return oplog_write(
            op="memory.save", actor=Actor.for_user(user), palace=palace, target_kind="memory", reason=reason
        )


def test_the_op_log_is_partitioned_by_month_with_partitions_ahead(alice: Any) -> None:
    assert _one("SELECT partstrat FROM pg_partitioned_table WHERE partrelid = 'palace_oplog'::regclass") == "r"
    names = [p.name for p in oplog_partitions()]
    today = datetime.now(UTC).date()
    assert f"palace_oplog_p{today:%Y_%m}" in names and names[-1] == "palace_oplog_default"
    assert len([n for n in names if n >= f"palace_oplog_p{today:%Y_%m}" and n != "palace_oplog_default"]) >= 4
    # A row written now (alice's palace.create) is in this month's partition, not the DEFAULT one.
    row = OpLog.objects.filter(op="palace.create", palace__personal_owner=alice).get()
    assert _partition_of(row.pk) == f"palace_oplog_p{today:%Y_%m}"
    # Every partition has row-level security on and forced, with the parent's four policies.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,"
            " (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid)"
            " FROM pg_partition_tree('palace_oplog') t JOIN pg_class c ON c.oid = t.relid WHERE t.isleaf"
        )
        leaves = cursor.fetchall()
    assert leaves and all(rls and forced and policies == 4 for _, rls, forced, policies in leaves), leaves
    assert _one("SELECT count(*) FROM pg_policy WHERE polrelid = 'palace_oplog'::regclass") == 4


def test_an_old_months_rows_sit_in_its_partition_and_every_reader_still_sees_them(
    alice: Any, bob: Any, make_user: Any
) -> None:
    assert oplog_partitions_ensure(since=date(2024, 5, 1))["2024-05"] == "created"
    personal = Palace.objects.get(personal_owner=alice)
    row = _write_old(personal, alice, "kettle descaled, May 2024")
    assert _partition_of(row.pk) == OLD_PARTITION

    # The Log's selector, acting as the owner (the control) and as someone else (sees nothing of it).
    with acting_as(alice):
        assert row.pk in [r.pk for r in oplog_page(user=alice, limit=500).items]
    with acting_as(bob):
        assert row.pk not in [r.pk for r in oplog_page(user=bob, limit=500).items]
        assert not OpLog.objects.filter(pk=row.pk).exists()

    # The panel's Log page and the audit console read the parent: the old month's row is on both.
    owner = Client()
    owner.force_login(alice)
    assert "kettle descaled, May 2024" in owner.get("/log/").content.decode()
    staff = Client()
    staff.force_login(make_user("root", admin=True))
    console = staff.get("/admin/palace/oplog/", {"created_at__year": "2024"})
    assert console.status_code == 200 and "kettle descaled, May 2024" in console.content.decode()


def test_a_partition_read_or_written_directly_is_held_to_the_parents_rules(alice: Any, bob: Any) -> None:
    oplog_partitions_ensure(since=date(2024, 5, 1))
    row = _write_old(Palace.objects.get(personal_owner=alice), alice, "the original reason")
    direct = f"SELECT count(*) FROM {OLD_PARTITION} WHERE id = %s"  # noqa: S608 - a constant
    with acting_as(alice), connection.cursor() as cursor:
        cursor.execute(direct, [row.pk])
        assert cursor.fetchone()[0] == 1  # the control: the owner reads their row, through the partition too
    with acting_as(bob), connection.cursor() as cursor:
        cursor.execute(direct, [row.pk])
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT count(*) FROM palace_oplog_default WHERE palace_id = %s", [row.palace_id])
        assert cursor.fetchone()[0] == 0
    for table in (OLD_PARTITION, "palace_oplog"):
        for sql in (f"UPDATE {table} SET reason = 'rewritten' WHERE id = %s", f"DELETE FROM {table} WHERE id = %s"):
            with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cur:
                cur.execute(sql, [row.pk])
    row.refresh_from_db()
    assert row.reason == "the original reason"


def test_ensure_is_idempotent_and_a_month_already_in_the_default_partition_is_held(alice: Any) -> None:
    first = oplog_partitions_ensure(since=date(2024, 5, 1))
    assert first["2024-05"] == "created" and set(first.values()) <= {"created", "exists"}
    assert set(oplog_partitions_ensure(since=date(2024, 5, 1)).values()) == {"exists"}
    # A row of a month with no partition yet (far ahead) goes to the DEFAULT partition and stays readable there.
    ahead = datetime(2031, 6, 2, 12, tzinfo=UTC)
    with time_machine.travel(ahead, tick=False), transaction.atomic():
        row = oplog_write(op="test.ahead", actor=Actor.for_system("tests"))
    assert _partition_of(row.pk) == "palace_oplog_default"
    with time_machine.travel(ahead, tick=False):
        answers = oplog_partitions_ensure()
    assert answers["2031-06"] == "held" and answers["2031-07"] == "created"
    assert _partition_of(row.pk) == "palace_oplog_default"
    assert OpLog.objects.filter(pk=row.pk, op="test.ahead").exists()


def test_ids_keep_coming_from_one_sequence_and_the_estimate_sums_the_partitions(alice: Any) -> None:
    oplog_partitions_ensure(since=date(2024, 5, 1))
    old = _write_old(Palace.objects.get(personal_owner=alice), alice, "old")
    with transaction.atomic():
        new = oplog_write(op="test.now", actor=Actor.for_system("tests"))
    assert new.pk > old.pk  # one sequence across months
    reserved = sequence_ids("palace_oplog", 3)
    assert reserved == sorted(reserved) and reserved[0] > new.pk
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE palace_oplog")
    assert oplog_rows_estimate() == OpLog.objects.count()  # small tables: ANALYZE counts every row


def test_the_daily_task_is_on_the_beat_schedule_and_makes_the_next_months(alice: Any) -> None:
    row = PeriodicTask.objects.get(name="atrium: op log partitions")
    assert row.task == PARTITIONS_TASK and row.enabled and row.crontab is not None
    ahead = datetime(2029, 1, 20, tzinfo=UTC)
    with time_machine.travel(ahead, tick=False):
        months = oplog_partitions_task()
    assert months == {"2029-01": "created", "2029-02": "created", "2029-03": "created", "2029-04": "created"}
    assert {"palace_oplog_p2029_01", "palace_oplog_p2029_04"} <= {p.name for p in oplog_partitions()}
