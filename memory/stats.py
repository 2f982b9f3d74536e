"""Counts over the memories of one or more palaces and the signal ratio, measured now (never a default that reads as
healthy). With the due count they make the palace overview (review.selectors.memory_overview) that REST's /stats,
MCP's memory_stats and the panel's Today all show.

Signal ratio: of the active memories, the share that retrieval has ever returned and used (hit_count > 0). A
palace full of memories nobody ever finds is noise; ``None`` when there are no active memories to measure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import Count, Q
from django.utils import timezone

from memory.models import Edge, Memory

WEEK_DAYS = 7


@dataclass
class MemoryStats:
    total: int
    by_status: dict[str, int]
    by_kind: dict[str, int]  # active memories per kind
    without_vector: int  # not forgotten, no embedding yet (the backfill's work)
    unslotted: int
    review_enrolled: int  # active memories under review
    pending_contradictions: int
    created_last_7_days: int  # the last 7 × 24 hours
    created_by_day: dict[date, int]  # each of the last seven local days (`last_days`), oldest first
    signal_ratio: float | None
    signal_reason: str


def last_days(now: datetime, n: int = WEEK_DAYS) -> list[date]:
    """The last `n` local days up to today, oldest first."""
    today = timezone.localdate(now)
    return [today - timedelta(days=n - 1 - i) for i in range(n)]


def day_start(day: date) -> datetime:
    """The moment a local day began."""
    return timezone.make_aware(datetime.combine(day, datetime.min.time()))


def memory_stats(*, palace_ids: Sequence[int], now: datetime | None = None) -> MemoryStats:
    """Every count from one pass over the palaces' memories (conditional counts in one aggregate), plus the pending
    contradictions: two reads whatever the number of memories."""
    now = now or timezone.now()
    days = last_days(now)
    starts = [day_start(d) for d in [*days, days[-1] + timedelta(days=1)]]
    active = Q(status=Memory.Status.ACTIVE)
    counts: dict[str, Any] = {
        "total": Count("pk"),
        "without_vector": Count("pk", filter=~Q(status=Memory.Status.FORGOTTEN) & Q(embedding__isnull=True)),
        "unslotted": Count("pk", filter=Q(slot__isnull=True)),
        "enrolled": Count("pk", filter=active & Q(review_enrolled=True)),
        "recent": Count("pk", filter=Q(created_at__gte=now - timedelta(days=WEEK_DAYS))),
        "active": Count("pk", filter=active),
        "used": Count("pk", filter=active & Q(hit_count__gt=0)),
    }
    counts |= {f"status_{s}": Count("pk", filter=Q(status=s)) for s in Memory.Status.values}
    counts |= {f"kind_{k}": Count("pk", filter=active & Q(kind=k)) for k in Memory.Kind.values}
    counts |= {
        f"day_{i}": Count("pk", filter=Q(created_at__gte=starts[i], created_at__lt=starts[i + 1]))
        for i in range(len(days))
    }
    agg = Memory.objects.filter(palace_id__in=palace_ids).aggregate(**counts)
    pending = Edge.objects.filter(
        palace_id__in=palace_ids, kind=Edge.Kind.CONTRADICTS, status=Edge.Status.PENDING
    ).count()
    if agg["active"]:
        ratio: float | None = round(agg["used"] / agg["active"], 4)
        reason = f"{agg['used']} of {agg['active']} active memories have been retrieved at least once"
    else:
        ratio, reason = None, "unknown: no active memories"
    return MemoryStats(
        total=agg["total"],
        by_status={s: agg[f"status_{s}"] for s in Memory.Status.values},
        by_kind={k: agg[f"kind_{k}"] for k in Memory.Kind.values},
        without_vector=agg["without_vector"],
        unslotted=agg["unslotted"],
        review_enrolled=agg["enrolled"],
        pending_contradictions=pending,
        created_last_7_days=agg["recent"],
        created_by_day={day: agg[f"day_{i}"] for i, day in enumerate(days)},
        signal_ratio=ratio,
        signal_reason=reason,
    )
