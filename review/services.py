"""Writes for spaced review: enrolment, lazy card materialisation, reveal (an access record) and grading.

Grading advances the pure SM-2 schedule in review/scheduler.py. `now` is captured once per operation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memory.lifecycle import memory_lock
from memory.models import AccessRecord, Memory
from memory.selectors import memory_get
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput
from palace.oplog import oplog_write
from review import scheduler
from review.models import ReviewCard

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


def _state_of(card: ReviewCard) -> scheduler.CardState:
    return scheduler.CardState(
        repetitions=card.repetitions,
        interval_days=card.interval_days,
        ease=card.ease,
        due_at=card.due_at,
        last_reviewed_at=card.last_reviewed_at,
    )


def _materialise(memory: Memory) -> ReviewCard:
    """The memory's card, created from the initial state (due created_at + first-due days) if it has none yet.

    Caller holds the memory row lock, so two graders cannot both create it.
    """
    card = ReviewCard.objects.select_for_update().filter(memory=memory).first()
    if card is not None:
        return card
    state = scheduler.initial_state(now=memory.created_at, first_due_days=settings.ATRIUM_REVIEW_FIRST_DUE_DAYS)
    return ReviewCard.objects.create(
        memory=memory,
        palace_id=memory.palace_id,
        repetitions=state.repetitions,
        interval_days=state.interval_days,
        ease=state.ease,
        due_at=state.due_at,
    )


def review_enrol(*, memory_id: int, actor: Actor, now: datetime | None = None) -> ReviewCard:
    """Put a memory under review explicitly (e.g. a backfilled one a person wants to practise): due now."""
    now = now or timezone.now()
    with transaction.atomic():
        row = memory_lock(memory_id=memory_id, actor=actor)
        if row.status != Memory.Status.ACTIVE:
            raise Conflict(f"memory #{row.pk} is {row.status}; only active memories can be reviewed")
        card = _materialise(row)
        if not card.active or not row.review_enrolled:
            card.active = True
            card.due_at = min(card.due_at, now)
            card.save(update_fields=["active", "due_at"])
            Memory.objects.filter(pk=row.pk).update(review_enrolled=True)
            oplog_write(
                op="review.enrol",
                actor=actor,
                palace=row.palace,
                target_kind="memory",
                target_id=row.pk,
                detail={"due_at": card.due_at.isoformat()},
            )
    return card


def review_unenrol(*, memory_id: int, actor: Actor, reason: str = "") -> None:
    """Take a memory out of review: it leaves the queue and may decay again."""
    with transaction.atomic():
        row = memory_lock(memory_id=memory_id, actor=actor)
        changed = Memory.objects.filter(pk=row.pk, review_enrolled=True).update(review_enrolled=False)
        ReviewCard.objects.filter(memory=row).update(active=False)
        if changed:
            oplog_write(
                op="review.unenrol",
                actor=actor,
                palace=row.palace,
                target_kind="memory",
                target_id=row.pk,
                reason=reason,
            )


def review_grade(*, memory_id: int, grade: int, actor: Actor, now: datetime | None = None) -> ReviewCard:
    """Self-rate a recall 0–5 and advance the SM-2 schedule (1 → 6 → round(prev × ease) days; < 3 resets).

    A memory under review without a card gets it now (lazy materialisation). Grading a memory that is not under
    review enrols it: practising it is an explicit choice. One op row per grade.
    """
    if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 5:
        raise InvalidInput("grade must be an integer from 0 to 5", field="grade")
    now = now or timezone.now()
    with transaction.atomic():
        row = memory_lock(memory_id=memory_id, actor=actor)
        if row.status != Memory.Status.ACTIVE:
            raise Conflict(f"memory #{row.pk} is {row.status}; only active memories are reviewed")
        current = _materialise(row)
        before = _state_of(current)
        after = scheduler.sm2_next(state=before, grade=grade, now=now)
        current.repetitions = after.repetitions
        current.interval_days = after.interval_days
        current.ease = after.ease
        current.due_at = after.due_at
        current.last_reviewed_at = after.last_reviewed_at
        current.last_grade = grade
        current.active = True
        current.save()
        if not row.review_enrolled:
            Memory.objects.filter(pk=row.pk).update(review_enrolled=True)
        oplog_write(
            op="review.grade",
            actor=actor,
            palace=row.palace,
            target_kind="memory",
            target_id=row.pk,
            detail={
                "grade": grade,
                "days_overdue": scheduler.days_overdue(state=before, now=now),
                "repetitions": after.repetitions,
                "interval_days": after.interval_days,
                "ease": after.ease,
                "due_at": after.due_at.isoformat(),
            },
        )
    return current


@dataclass(frozen=True)
class Reveal:
    memory: Memory
    card: ReviewCard | None
    due_at: datetime | None


def review_reveal(
    *,
    user: AbstractBaseUser,
    memory_id: int,
    token_id: int | None = None,
    now: datetime | None = None,
    record: bool = True,
) -> Reveal:
    """The body of a memory the user may read, after recalling it from its cues. Recorded as an access (a read,
    not a mutation: no op row) when `record`: the doors record only on POST, since a GET must not write (a link,
    a prefetch or another site's image tag would otherwise add access records in the user's name)."""
    now = now or timezone.now()
    memory = memory_get(user=user, memory_id=memory_id)
    card = ReviewCard.objects.filter(memory=memory).first()
    due_at: datetime | None = card.due_at if card is not None else None
    if card is None and memory.review_enrolled:
        due_at = scheduler.initial_state(
            now=memory.created_at, first_due_days=settings.ATRIUM_REVIEW_FIRST_DUE_DAYS
        ).due_at
    if record:
        AccessRecord.objects.create(memory=memory, user_id=user.pk, token_id=token_id, via="review")
    return Reveal(memory=memory, card=card, due_at=due_at)
