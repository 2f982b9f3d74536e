"""Celery tasks of the ops app: the scheduled backup (beat row from migration ops/0001_backup) and the op log's
monthly partitions made ahead (ops/0003_oplog_partitions_schedule)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from ops.backup import backup_scheduled
from palace.oplog import oplog_partitions_ensure
from palace.rls import acting_as_system

log = logging.getLogger(__name__)

BACKUP_TASK = "ops.backup"
PARTITIONS_TASK = "ops.oplog_partitions"


@shared_task(name=BACKUP_TASK, ignore_result=True)
def backup_task() -> dict[str, Any]:
    result = backup_scheduled()
    log.info("backup: %s", result)
    return result


@shared_task(name=PARTITIONS_TASK, ignore_result=True)
def oplog_partitions_task() -> dict[str, str]:
    """This month's and the next months' op log partitions (palace/oplog/partitions.py); "held" months are logged."""
    with acting_as_system("beat: op log partitions"):
        months = oplog_partitions_ensure()
    held = [month for month, answer in months.items() if answer == "held"]
    if held:
        log.warning("op log: rows of %s are in the DEFAULT partition; those months keep no partition", held)
    log.info("op log partitions: %s", months)
    return months
