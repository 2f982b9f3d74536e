"""Celery tasks of the ops app: the scheduled backup (beat row from migration ops/0001_backup)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from ops.backup import backup_scheduled

log = logging.getLogger(__name__)

BACKUP_TASK = "ops.backup"


@shared_task(name=BACKUP_TASK, ignore_result=True)
def backup_task() -> dict[str, Any]:
    result = backup_scheduled()
    log.info("backup: %s", result)
    return result
