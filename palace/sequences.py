"""Row ids reserved up front from a table's own sequence: a bulk writer gives rows their ids before inserting them
(so other rows can point to them at once) and inserts them all in one statement later. Ids reserved and not used
are gaps in the sequence, as a rolled-back insert leaves."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Model


def sequence_ids(table: str, count: int) -> list[int]:
    """`count` new ids of `table`'s `id` sequence, in one query."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)", [table, max(1, count)]
        )
        return [row[0] for row in cursor.fetchall()]


@dataclass
class IdReserve:
    """Ids for new rows of any model, `block` reserved at a time per table."""

    block: int = 10
    _pools: dict[str, list[int]] = field(default_factory=dict)

    def next_id(self, model: type[Model]) -> int:
        table = model._meta.db_table
        pool = self._pools.setdefault(table, [])
        if not pool:
            pool += sequence_ids(table, self.block)
        return pool.pop(0)
