"""Reads for spaced review: the due queue (cues only, never the body), the due count, and the palace overview (the
memory counts with the due count beside them, which REST, MCP and the panel's Today all show).

An enrolled memory without a ReviewCard has never been reviewed: it is due at created_at +
ATRIUM_REVIEW_FIRST_DUE_DAYS (0 = at once), and its card is materialised on the first grade (review/services.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from memory.models import Memory
from memory.selectors import MemoryStats, RoomEntry, memory_stats, room_directory
from palace.errors import NotFound
from palace.models import Palace
from palace.selectors import palace_ids_readable
from review import scheduler
from review.models import ReviewCard

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    User = AbstractBaseUser | AnonymousUser | None

QUEUE_MAX = 200


@dataclass(frozen=True)
class QueueItem:
    """One due memory, by its cues: where it lives and its placard. The body is not here on purpose."""

    memory_id: int
    card_id: int | None  # None until the first grade materialises the card
    palace_id: int
    kind: str
    coordinate: str
    placard: str
    due_at: datetime
    days_overdue: int
    repetitions: int
    interval_days: int


def review_palace_ids(*, user: User, palace_ids: list[int] | None = None) -> list[int]:
    """The palaces to review in: all readable ones, or the asked ones (NotFound if any is not readable)."""
    readable = set(palace_ids_readable(user=user))
    if palace_ids is None:
        return sorted(readable)
    wanted = {int(p) for p in palace_ids}
    if not wanted <= readable:
        raise NotFound("palace not found")
    return sorted(wanted)


def _enrolled(palaces: list[int]) -> QuerySet[Memory]:
    return Memory.objects.filter(palace_id__in=palaces, status=Memory.Status.ACTIVE, review_enrolled=True)


def _due_cards(palaces: list[int], now: datetime) -> QuerySet[ReviewCard]:
    return ReviewCard.objects.filter(
        palace_id__in=palaces,
        active=True,
        due_at__lte=now,
        memory__status=Memory.Status.ACTIVE,
        memory__review_enrolled=True,
    )


def _due_uncarded(palaces: list[int], now: datetime) -> QuerySet[Memory]:
    cutoff = now - timedelta(days=settings.ATRIUM_REVIEW_FIRST_DUE_DAYS)
    return _enrolled(palaces).filter(review_card__isnull=True, created_at__lte=cutoff)


def review_queue(
    *, user: User, palace_ids: list[int] | None = None, now: datetime | None = None, limit: int = 50
) -> list[QueueItem]:
    """Due memories, most overdue first: room#slot, placard and days overdue — never the content."""
    now = now or timezone.now()
    limit = max(1, min(int(limit), QUEUE_MAX))
    palaces = review_palace_ids(user=user, palace_ids=palace_ids)
    items: list[QueueItem] = []
    for card in _due_cards(palaces, now).select_related("memory__slot__room").order_by("due_at", "pk")[:limit]:
        state = scheduler.CardState(
            repetitions=card.repetitions,
            interval_days=card.interval_days,
            ease=card.ease,
            due_at=card.due_at,
            last_reviewed_at=card.last_reviewed_at,
        )
        items.append(
            _item(card.memory, card=card, due_at=card.due_at, overdue=scheduler.days_overdue(state=state, now=now))
        )
    for memory in _due_uncarded(palaces, now).select_related("slot__room").order_by("created_at", "pk")[:limit]:
        state = scheduler.initial_state(now=memory.created_at, first_due_days=settings.ATRIUM_REVIEW_FIRST_DUE_DAYS)
        items.append(
            _item(memory, card=None, due_at=state.due_at, overdue=scheduler.days_overdue(state=state, now=now))
        )
    items.sort(key=lambda i: (i.due_at, i.memory_id))
    return items[:limit]


def _item(memory: Memory, *, card: ReviewCard | None, due_at: datetime, overdue: int) -> QueueItem:
    return QueueItem(
        memory_id=memory.pk,
        card_id=card.pk if card is not None else None,
        palace_id=memory.palace_id,
        kind=memory.kind,
        coordinate=memory.slot.coordinate if memory.slot is not None else "",
        placard=memory.placard,
        due_at=due_at,
        days_overdue=overdue,
        repetitions=card.repetitions if card is not None else 0,
        interval_days=card.interval_days if card is not None else 0,
    )


UPCOMING_DAYS = 366  # how far ahead "review early" looks for the next cards to come due


def review_upcoming(
    *, user: User, palace_ids: list[int] | None = None, now: datetime | None = None, limit: int = 3
) -> list[QueueItem]:
    """The next memories to come due after `now`, soonest first (Today's "review early" on a day nothing is due):
    review_queue's items as of a year ahead, the ones already due dropped (ask when none is due), none overdue."""
    now = now or timezone.now()
    ahead = review_queue(user=user, palace_ids=palace_ids, now=now + timedelta(days=UPCOMING_DAYS), limit=limit)
    return [replace(i, days_overdue=0) for i in ahead if i.due_at > now][: max(1, int(limit))]


def review_due_ids(
    *, user: User, palace_ids: list[int] | None = None, now: datetime | None = None, limit: int = QUEUE_MAX
) -> list[int]:
    """The ids of the due memories in review_queue's order (most overdue first), without building queue items:
    for a "due" filter. Two id-only queries."""
    now = now or timezone.now()
    limit = max(1, min(int(limit), QUEUE_MAX))
    palaces = review_palace_ids(user=user, palace_ids=palace_ids)
    if not palaces:
        return []
    carded = _due_cards(palaces, now).order_by("due_at", "pk").values_list("due_at", "memory_id")[:limit]
    first_due = timedelta(days=settings.ATRIUM_REVIEW_FIRST_DUE_DAYS)
    uncarded = [
        (created + first_due, pk)
        for created, pk in _due_uncarded(palaces, now)
        .order_by("created_at", "pk")
        .values_list("created_at", "pk")[:limit]
    ]
    return [pk for _, pk in sorted([*carded, *uncarded])[:limit]]


def review_due_count(*, user: User, palace_ids: list[int] | None = None, now: datetime | None = None) -> int:
    """How many memories are due now (the Today badge and the profile's "N due" line). Two COUNT queries."""
    now = now or timezone.now()
    palaces = review_palace_ids(user=user, palace_ids=palace_ids)
    if not palaces:
        return 0
    return _due_cards(palaces, now).count() + _due_uncarded(palaces, now).count()


@dataclass
class Overview:
    """A palace (or a scope of palaces) at a glance: the memory counts, the reviews due now and, when asked for one
    palace, its room directory."""

    stats: MemoryStats
    reviews_due: int
    rooms: list[RoomEntry] = field(default_factory=list)


def memory_overview(
    *, user: User, palaces: Sequence[Palace], now: datetime | None = None, rooms: bool = False
) -> Overview:
    """The overview of palaces the caller resolved through palace.selectors: memory_stats (two reads), the due count
    (three) and, with `rooms` (one palace only), the room directory (three)."""
    now = now or timezone.now()
    palace_ids = [p.pk for p in palaces]
    if rooms and len(palaces) != 1:
        raise ValueError("the room directory is of one palace")
    return Overview(
        stats=memory_stats(palace_ids=palace_ids, now=now),
        reviews_due=review_due_count(user=user, palace_ids=palace_ids, now=now),
        rooms=room_directory(palace=palaces[0]) if rooms else [],
    )
