"""Tombstones: a forgotten memory is not brought back by saving it again.

When a save's content restates a forgotten memory of the same palace — by the same near-duplicate rule as MERGE
(memory.judge.dispositions.dispose: same kind and speaker, cosine >= ATRIUM_MERGE_SIMILARITY, a lexical restatement) —
the pipeline does not create a copy. Without `restore` the result is DEFER, nothing is written, and the hint names
the forgotten memory and its epitaph; with `restore: true` the original is restored (status active, op row
`memory.restore` with `via: save`) instead of a copy being made.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import F

from memory.judge import dispose
from memory.models import Memory
from memory.save.input import Prepared
from memory.save.neighbours import nearest
from memory.text import truncate_to_chars
from palace.actors import Actor
from palace.models import Palace
from palace.oplog import oplog_write


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


def has_forgotten(*, palace: Palace) -> bool:
    """Whether the palace holds a forgotten memory a save could restate (one with a vector)."""
    return Memory.objects.filter(palace=palace, status=Memory.Status.FORGOTTEN, embedding__isnull=False).exists()


def tombstone_check(
    *, palace: Palace, p: Prepared, vector: list[float], actor: Actor, now: datetime
) -> Tombstone | None:
    """The forgotten memory this content restates, restored when `p.restore` (inside the save transaction)."""
    decision = dispose(
        content=p.content,
        kind=p.kind,
        speaker=p.speaker,
        neighbours=nearest(palace=palace, vector=vector, status=Memory.Status.FORGOTTEN),
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
