"""The two backfills: every memory saved while the embedder was down gets its vector (embeddings_backfill), and
every memory without a slot, from older data or a bulk load, gets one (slots_backfill).

Plain services (the Celery task in memory/tasks.py, `atrium backfill-embeddings` and `atrium backfill-slots` are thin
doors over them), and idempotent: each row is written by a conditional UPDATE or under a row lock that re-checks that
it still needs it, so a second run, or two workers at once, changes nothing the first already changed.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import QuerySet

from memory.models import Memory
from memory.providers import EmbedderUnavailable, embed_passages, embedder_loaded_at, embedder_model_name
from memory.text import build_embedding_text
from palace.actors import Actor
from palace.models import Palace
from palace.oplog import oplog_write
from palace.slots import slot_assign

log = logging.getLogger(__name__)

BACKFILL_JOB = "embeddings-backfill"


@dataclass
class BackfillResult:
    embedded: int = 0
    remaining: int = 0  # rows still without a vector after this run (what health reports)
    degraded: str = ""  # why the run stopped early ("" when it did not)
    model: str = ""
    memory_ids: list[int] = field(default_factory=list)


def _missing_vectors() -> QuerySet[Memory]:
    # The same population ops/health.py counts as without_vector: everything but forgotten memories.
    return Memory.objects.exclude(status=Memory.Status.FORGOTTEN).filter(embedding__isnull=True)


def embeddings_backfill(
    *, batch_size: int = 32, limit: int | None = None, actor: Actor | None = None
) -> BackfillResult:
    """Give every memory saved while the embedder was down its vector, in batches, oldest first.

    Each row is written only if it still has no vector (a conditional UPDATE), so concurrent runs cannot clash
    and a second run does nothing. One op row per palace touched, with the worker's pid and the moment this
    process loaded its embedder (so a run can show the model was loaded once per process).
    """
    actor = actor or Actor.for_system(BACKFILL_JOB)
    result = BackfillResult()
    last_pk = 0
    done: dict[int, list[int]] = {}
    while limit is None or result.embedded < limit:
        take = batch_size if limit is None else min(batch_size, limit - result.embedded)
        batch = list(
            _missing_vectors()
            .filter(pk__gt=last_pk)
            .order_by("pk")
            .only("pk", "palace_id", "content", "placard", "speaker", "occurred_at")[:take]
        )
        if not batch:
            break
        last_pk = batch[-1].pk
        texts = [
            build_embedding_text(content=m.content, placard=m.placard, speaker=m.speaker, occurred_at=m.occurred_at)
            for m in batch
        ]
        try:
            vectors = embed_passages(texts)
        except EmbedderUnavailable as exc:
            result.degraded = f"embedder unavailable: {exc}"
            log.warning("embedding backfill stopped: %s", exc)
            break
        result.model = embedder_model_name()
        for memory, vector in zip(batch, vectors, strict=True):
            claimed = Memory.objects.filter(pk=memory.pk, embedding__isnull=True).update(
                embedding=vector.tolist(), embedding_model=result.model
            )
            if claimed:
                done.setdefault(memory.palace_id, []).append(memory.pk)
                result.embedded += 1
                result.memory_ids.append(memory.pk)
    if done:
        palaces = {p.pk: p for p in Palace.objects.filter(pk__in=done)}
        loaded_at = embedder_loaded_at()
        with transaction.atomic():
            for palace_id, ids in done.items():
                oplog_write(
                    op="embeddings.backfill",
                    actor=actor,
                    palace=palaces[palace_id],
                    target_kind="palace",
                    target_id=palace_id,
                    reason=f"embedded {len(ids)} memories saved without a vector",
                    detail={
                        "count": len(ids),
                        "memory_ids": ids[:200],
                        "model": result.model,
                        "pid": os.getpid(),
                        "embedder_loaded_at": loaded_at,
                    },
                )
    result.remaining = _missing_vectors().count()
    return result


SLOTS_JOB = "slots-backfill"


def slots_backfill(*, palace: Palace | None = None, actor: Actor | None = None) -> int:
    """Pin every memory that has no slot (older data, bulk loads) to one, oldest first, so it joins the palace.

    A correction whose predecessor has a slot inherits it. Idempotent: a row is slotted only while it has none.
    One op row per palace touched. Returns how many memories were slotted.
    """
    actor = actor or Actor.for_system(SLOTS_JOB)
    qs = Memory.objects.filter(slot__isnull=True)
    if palace is not None:
        qs = qs.filter(palace=palace)
    counts: Counter[int] = Counter()
    for pk in qs.order_by("created_at", "pk").values_list("pk", flat=True):
        with transaction.atomic():
            row = (
                Memory.objects.select_for_update(of=("self",))
                .select_related("palace", "supersedes__slot")
                .filter(pk=pk, slot__isnull=True)
                .first()
            )
            if row is None:
                continue
            inherit = row.supersedes.slot if row.supersedes is not None else None
            row.slot = slot_assign(palace=row.palace, kind=row.kind, actor=actor, inherit=inherit)
            Memory.objects.filter(pk=pk).update(slot=row.slot)
        counts[row.palace_id] += 1
    if counts:
        palaces = {p.pk: p for p in Palace.objects.filter(pk__in=counts)}
        with transaction.atomic():
            for palace_id, n in counts.items():
                oplog_write(
                    op="slots.backfill",
                    actor=actor,
                    palace=palaces[palace_id],
                    target_kind="palace",
                    target_id=palace_id,
                    reason=f"slotted {n} memories that had no place",
                    detail={"count": n},
                )
    return sum(counts.values())
