"""PostgreSQL advisory locks that say "one worker at a time" for a row (a capture session, a backfill run).

The lock is taken at the connection's session level, not the transaction's: it outlives the transactions the holder
commits while it works, and dies with a killed worker's connection, so a free lock on a row left "running" tells a
dead holder from a live one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db import connection

_INT4_MAX = 2_147_483_647  # the two-key form takes two int4s; a bigint id is folded into range


@contextlib.contextmanager
def advisory_lock(*, lock_class: int, object_id: int) -> Iterator[bool]:
    """Try to hold the lock (lock_class, object_id) without waiting; yields False when another connection has it.
    `lock_class` names what is locked (one constant per kind of row), `object_id` the row."""
    objid = object_id % _INT4_MAX
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [lock_class, objid])
        got = bool(cursor.fetchone()[0])
    try:
        yield got
    finally:
        if got:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [lock_class, objid])
