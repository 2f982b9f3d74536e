"""Access records age out after ATRIUM_ACCESS_RECORDS_KEEP_DAYS (memory/jobs/retention.py); the op log never does."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.test import override_settings
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from config.celery_app import app as celery_app
from memory import tasks
from memory.jobs import access_records_prune
from memory.models import AccessRecord, Memory
from palace.models import OpLog, Palace
from tests.fakes.memories import make_memory

pytestmark = pytest.mark.django_db


def _access(memory: Memory, user: Any, *, days_ago: float) -> AccessRecord:
    record = AccessRecord.objects.create(memory=memory, user=user, rank=1, via="search")
    AccessRecord.objects.filter(pk=record.pk).update(created_at=timezone.now() - timedelta(days=days_ago))
    return record


def _ages(*records: AccessRecord) -> set[int]:
    return set(AccessRecord.objects.filter(pk__in=[r.pk for r in records]).values_list("pk", flat=True))


def test_records_older_than_the_bound_go_in_chunks_for_every_palace_and_the_rest_and_the_op_log_stay(
    palace: Palace, alice: Any, bob: Any
) -> None:
    theirs = make_memory(Palace.objects.get(personal_owner=bob), "bob's note")
    mine = make_memory(palace, "alice's note")
    old = [_access(mine, alice, days_ago=400), _access(theirs, bob, days_ago=200), _access(mine, alice, days_ago=181)]
    young = [_access(mine, alice, days_ago=179), _access(theirs, bob, days_ago=1), _access(mine, bob, days_ago=0)]
    ops = OpLog.objects.count()

    preview = access_records_prune(keep_days=180, dry_run=True)
    assert (preview.deleted, preview.dry_run) == (3, True)
    assert _ages(*old, *young) == {r.pk for r in old + young}  # a dry run deletes nothing

    done = access_records_prune(keep_days=180, chunk=2)  # two chunks: 2, then 1
    assert (done.deleted, done.keep_days) == (3, 180)
    assert _ages(*old) == set()
    assert _ages(*young) == {r.pk for r in young}  # the control: the young ones, of both people, stay
    assert OpLog.objects.count() == ops  # history is never pruned
    assert Memory.objects.filter(pk__in=[mine.pk, theirs.pk]).count() == 2


def test_zero_keeps_everything_and_a_negative_bound_is_refused(palace: Palace, alice: Any) -> None:
    ancient = _access(make_memory(palace, "a note"), alice, days_ago=3650)
    assert access_records_prune(keep_days=0).deleted == 0
    assert _ages(ancient) == {ancient.pk}
    with pytest.raises(ValueError, match="keep_days"):
        access_records_prune(keep_days=-1)
    assert access_records_prune(keep_days=3000).deleted == 1  # the control: a bound it passes


@override_settings(ATRIUM_ACCESS_RECORDS_KEEP_DAYS=30)
def test_the_daily_task_reads_the_setting_and_is_on_the_beat_schedule(palace: Palace, alice: Any) -> None:
    memory = make_memory(palace, "a note")
    old, young = _access(memory, alice, days_ago=31), _access(memory, alice, days_ago=29)
    assert tasks.access_records_prune_task.run() == {"deleted": 1, "keep_days": 30}
    assert _ages(old, young) == {young.pk}

    assert tasks.ACCESS_PRUNE_TASK in celery_app.tasks
    # The migration's own installer (a flush by another test may have emptied the table it filled).
    migration = __import__("memory.migrations.0020_access_records_prune_schedule", fromlist=["install"])
    migration.install(django_apps, None)
    row = PeriodicTask.objects.get(name=migration.PRUNE)
    assert row.task == tasks.ACCESS_PRUNE_TASK and row.enabled
    assert row.interval is not None and (row.interval.every, row.interval.period) == (1, "days")
