"""Tombstones: a forgotten memory is not brought back by saving it again.

When a save's content restates a forgotten memory of the same palace — by the same near-duplicate rule as MERGE
(memory.dispositions.dispose: same kind and speaker, cosine >= ATRIUM_MERGE_SIMILARITY, a lexical restatement) —
the pipeline does not create a copy. Without `restore` the result is DEFER, nothing is written, and the hint names
the forgotten memory and its epitaph; with `restore: true` the original is restored (status active, op row
`memory.restore` with `via: save`) instead of a copy being made.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.db.models import F

from memory.judge import dispositions
from memory.models import HALF_DISTANCE, Memory, vector_literal
from memory.save.input import Prepared
from memory.text.textproc import truncate_to_chars
from palace.actors import Actor
from palace.models import Palace
from palace.oplog import oplog_write

NEIGHBOURS = 5


@dataclass(frozen=True)
class Tombstone:
    memory: Memory  # the forgotten memory the content restates (restored when `restored`)
    similarity: float
    restored: bool

    @property
    def hint(self) -> str:
        cue = f"#{self.memory.pk} “{truncate_to_chars(self.memory.placard or self.memory.content, 80)}”"
        if self.restored:
            return f"restores the forgotten {cue}; brought it back instead of saving a copy"
        epitaph = self.memory.epitaph or "no reason given"
        return (
            f"matches the forgotten {cue} (forgotten: {epitaph}); nothing saved. Pass restore: true to bring it "
            "back, or reword it if it says something new"
        )


def _forgotten_neighbours(*, palace: Palace, vector: list[float]) -> list[dispositions.Neighbour]:
    """The nearest forgotten memories of the palace (exact cosine of the stored vectors, as the pipeline judges)."""
    literal = vector_literal(vector)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(
            "SELECT m.id, m.kind, m.content, m.placard, m.speaker, m.embedding <=> %s::vector"  # noqa: S608
            " FROM memory_memory m WHERE m.palace_id = %s AND m.status = %s AND m.embedding IS NOT NULL"
            f" ORDER BY {HALF_DISTANCE} LIMIT %s",
            [literal, palace.pk, Memory.Status.FORGOTTEN, literal, NEIGHBOURS],
        )
        rows = cursor.fetchall()
    return [
        dispositions.Neighbour(
            id=pk, kind=kind, content=content, placard=placard, speaker=speaker, similarity=1.0 - float(distance)
        )
        for pk, kind, content, placard, speaker, distance in rows
    ]


def tombstone_check(
    *, palace: Palace, p: Prepared, vector: list[float], actor: Actor, now: datetime
) -> Tombstone | None:
    """The forgotten memory this content restates, restored when `p.restore` (inside the save transaction)."""
    decision = dispositions.dispose(
        content=p.content,
        kind=p.kind,
        speaker=p.speaker,
        neighbours=_forgotten_neighbours(palace=palace, vector=vector),
        merge_similarity=settings.ATRIUM_MERGE_SIMILARITY,
        contradiction_similarity=2.0,  # only the MERGE rule applies to the forgotten
    )
    if decision.merge_into is None:
        return None
    match = decision.merge_into
    memory = Memory.objects.select_for_update(of=("self",)).select_related("palace", "slot").get(pk=match.id)
    if not p.restore:
        return Tombstone(memory=memory, similarity=match.similarity, restored=False)
    epitaph = memory.epitaph
    Memory.objects.filter(pk=memory.pk).update(
        status=Memory.Status.ACTIVE, epitaph="", version=F("version") + 1, updated_at=now
    )
    memory.refresh_from_db()
    oplog_write(
        op="memory.restore",
        actor=actor,
        palace=palace,
        target_kind="memory",
        target_id=memory.pk,
        reason="saved again with restore: true",
        detail={
            "from_status": "forgotten",
            "via": "save",
            "epitaph": epitaph,
            "similarity": round(match.similarity, 4),
        },
    )
    return Tombstone(memory=memory, similarity=match.similarity, restored=True)
