"""Whole-palace statistics and the signal ratio, measured now (never a default that reads as healthy).

Signal ratio: of the active memories, the share that retrieval has ever returned and used (hit_count > 0). A
palace full of memories nobody ever finds is noise; ``None`` when there are no active memories to measure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, Q
from django.utils import timezone

from memory.corridor import RoomEntry, room_directory
from memory.models import Edge, Memory
from palace.models import Palace


@dataclass
class PalaceStats:
    palace_id: int
    total: int
    by_status: dict[str, int]
    by_kind: dict[str, int]  # active memories per kind
    without_vector: int  # not forgotten, no embedding yet (the backfill's work)
    unslotted: int
    review_enrolled: int  # active memories under review
    pending_contradictions: int
    created_last_7_days: int
    signal_ratio: float | None
    signal_reason: str
    rooms: list[RoomEntry] = field(default_factory=list)


def palace_stats(*, palace: Palace, now: datetime | None = None) -> PalaceStats:
    now = now or timezone.now()
    mine = Memory.objects.filter(palace=palace)
    active = Q(status=Memory.Status.ACTIVE)
    agg = mine.aggregate(
        total=Count("pk"),
        without_vector=Count("pk", filter=~Q(status=Memory.Status.FORGOTTEN) & Q(embedding__isnull=True)),
        unslotted=Count("pk", filter=Q(slot__isnull=True)),
        enrolled=Count("pk", filter=active & Q(review_enrolled=True)),
        recent=Count("pk", filter=Q(created_at__gte=now - timedelta(days=7))),
        active=Count("pk", filter=active),
        used=Count("pk", filter=active & Q(hit_count__gt=0)),
    )
    by_status = dict.fromkeys(Memory.Status.values, 0)
    by_status.update(dict(mine.order_by().values_list("status").annotate(n=Count("pk")).values_list("status", "n")))
    by_kind = dict.fromkeys(Memory.Kind.values, 0)
    by_kind.update(
        dict(mine.filter(active).order_by().values_list("kind").annotate(n=Count("pk")).values_list("kind", "n"))
    )
    pending = Edge.objects.filter(palace=palace, kind=Edge.Kind.CONTRADICTS, status=Edge.Status.PENDING).count()
    if agg["active"]:
        ratio: float | None = round(agg["used"] / agg["active"], 4)
        reason = f"{agg['used']} of {agg['active']} active memories have been retrieved at least once"
    else:
        ratio, reason = None, "unknown: no active memories"
    return PalaceStats(
        palace_id=palace.pk,
        total=agg["total"],
        by_status=by_status,
        by_kind=by_kind,
        without_vector=agg["without_vector"],
        unslotted=agg["unslotted"],
        review_enrolled=agg["enrolled"],
        pending_contradictions=pending,
        created_last_7_days=agg["recent"],
        signal_ratio=ratio,
        signal_reason=reason,
        rooms=room_directory(palace=palace),
    )
