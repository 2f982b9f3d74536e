"""The slot backfill: every memory without a slot (older data, bulk loads) is pinned to one, so it joins the palace.
Idempotent: a row is slotted only while it has none."""

from __future__ import annotations

from collections import Counter

from django.db import transaction

from memory.models import Memory
from palace.actors import Actor
from palace.models import Palace
from palace.oplog import oplog_write
from palace.slots import slot_assign

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
