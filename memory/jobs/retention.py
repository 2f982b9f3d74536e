"""What ages out of the ledgers: retrieval records, never the history of changes.

An access record (memory.AccessRecord) is written for every hit a search, an examine or a review returns: at a team's
pace that is the fastest-growing table (50 people searching 200 times a day, 10 hits each, is a million rows a
week). What a retrieval leaves that later work reads is kept on the memory itself (`hit_count`, `last_accessed_at`:
decay and ranking read those, memory/jobs/decay.py), so the rows themselves are evidence for the audit history of a
memory (memory/audit/history.py) and may age out after ATRIUM_ACCESS_RECORDS_KEEP_DAYS (0: kept for ever).

Evidence batches (memory.SearchBatch) are bounded where they are written (the newest BATCH_KEEP per person,
memory/search/search.py) and need no sweep. The op log is never pruned here: it is the record of every change, that
audit and restore read.

The sweep deletes in chunks of CHUNK rows, each its own short transaction, so a first run over years of rows neither
holds one long transaction nor locks the table against the searches writing new rows meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from memory.models import AccessRecord

CHUNK = 10_000


@dataclass
class RetentionResult:
    keep_days: int  # 0: nothing ages out
    cutoff: datetime | None
    deleted: int  # rows deleted (or that would be, on a dry run)
    dry_run: bool


def access_records_prune(
    *, keep_days: int | None = None, now: datetime | None = None, dry_run: bool = False, chunk: int = CHUNK
) -> RetentionResult:
    """Delete the access records older than `keep_days` (default ATRIUM_ACCESS_RECORDS_KEEP_DAYS), oldest first, in
    chunks (the module docstring). Must run as the system (a job, a command): row-level security shows a person only
    their palaces' rows."""
    days = settings.ATRIUM_ACCESS_RECORDS_KEEP_DAYS if keep_days is None else keep_days
    if days < 0:
        raise ValueError("keep_days must be 0 (keep for ever) or more")
    if days == 0:
        return RetentionResult(keep_days=0, cutoff=None, deleted=0, dry_run=dry_run)
    cutoff = (now or timezone.now()) - timedelta(days=days)
    old = AccessRecord.objects.filter(created_at__lt=cutoff)
    if dry_run:
        return RetentionResult(keep_days=days, cutoff=cutoff, deleted=old.count(), dry_run=True)
    deleted = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            # The oldest `chunk` by the created_at index; a plain DELETE ... LIMIT does not exist in PostgreSQL.
            cursor.execute(
                "DELETE FROM memory_accessrecord WHERE id IN ("
                " SELECT id FROM memory_accessrecord WHERE created_at < %s ORDER BY created_at LIMIT %s)",
                [cutoff, chunk],
            )
            gone = cursor.rowcount
        deleted += gone
        if gone < chunk:
            return RetentionResult(keep_days=days, cutoff=cutoff, deleted=deleted, dry_run=False)
