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

from django.db.models import Case, Count, DateField, Q, When
from django.db.models.functions import TruncDate
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
    """Every count from one grouped pass over the palaces' memories, plus the pending contradictions: two reads
    whatever the number of memories.

    The memories are grouped by kind, status and (for the last seven local days) their creation day, each group
    carrying its few conditional counts; the figures are sums over the groups (a few dozen). At 10,000 memories this
    is ~11 ms, against ~25 ms for one aggregate of two dozen conditional counts, because a condition is evaluated
    once per row for each count that has one.
    """
    now = now or timezone.now()
    days = last_days(now)
    in_week = Case(
        When(created_at__gte=day_start(days[0]), then=TruncDate("created_at")), default=None, output_field=DateField()
    )
    groups = (
        Memory.objects.filter(palace_id__in=palace_ids)
        .annotate(day=in_week)
        .values_list("kind", "status", "day")
        .annotate(
            n=Count("pk"),
            without_vector=Count("pk", filter=Q(embedding__isnull=True)),
            unslotted=Count("pk", filter=Q(slot__isnull=True)),
            enrolled=Count("pk", filter=Q(review_enrolled=True)),
            recent=Count("pk", filter=Q(created_at__gte=now - timedelta(days=WEEK_DAYS))),
            used=Count("pk", filter=Q(hit_count__gt=0)),
        )
        .order_by()
    )
    by_status = dict.fromkeys(Memory.Status.values, 0)
    by_kind = dict.fromkeys(Memory.Kind.values, 0)
    by_day = dict.fromkeys(days, 0)
    total = without_vector = unslotted = enrolled = recent = used = 0
    for kind, status, day, n, no_vector, no_slot, under_review, new, retrieved in groups:
        total += n
        by_status[status] = by_status.get(status, 0) + n
        unslotted += no_slot
        recent += new
        if status != Memory.Status.FORGOTTEN:
            without_vector += no_vector
        if status == Memory.Status.ACTIVE:
            by_kind[kind] = by_kind.get(kind, 0) + n
            enrolled += under_review
            used += retrieved
        if day in by_day:
            by_day[day] += n
    active = by_status[Memory.Status.ACTIVE]
    pending = Edge.objects.filter(
        palace_id__in=palace_ids, kind=Edge.Kind.CONTRADICTS, status=Edge.Status.PENDING
    ).count()
    if active:
        ratio: float | None = round(used / active, 4)
        reason = f"{used} of {active} active memories have been retrieved at least once"
    else:
        ratio, reason = None, "unknown: no active memories"
    return MemoryStats(
        total=total,
        by_status=by_status,
        by_kind=by_kind,
        without_vector=without_vector,
        unslotted=unslotted,
        review_enrolled=enrolled,
        pending_contradictions=pending,
        created_last_7_days=recent,
        created_by_day=by_day,
        signal_ratio=ratio,
        signal_reason=reason,
    )
