"""SM-2 spaced-repetition scheduling as pure functions: no ORM, no clock, no settings.

The numbers follow dsh-engram's review loop: intervals 1 → 6 → round(previous × ease) days, a reset to the
beginning on a failed recall (grade < 3), and an ease floor of 1.3. Callers capture ``now`` once per operation
and pass it in, so the same inputs always give the same schedule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

INITIAL_EASE = 2.5
EASE_FLOOR = 1.3
MIN_GRADE = 0
MAX_GRADE = 5
PASSING_GRADE = 3
FIRST_INTERVAL_DAYS = 1
SECOND_INTERVAL_DAYS = 6
# Plain SM-2 has no ceiling, but a run of perfect grades grows intervals geometrically and overflows `datetime`
# (year 9999) after about a dozen reviews. A century is "never" for a memory, so cap there.
MAX_INTERVAL_DAYS = 36_500


@dataclass(frozen=True)
class CardState:
    """Where one card stands in its review schedule.

    ``interval_days`` is the gap granted by the last review (0 before the first one); ``repetitions`` counts
    consecutive successful recalls since the last failure.
    """

    repetitions: int
    interval_days: int
    ease: float
    due_at: datetime
    last_reviewed_at: datetime | None

    def __post_init__(self) -> None:
        if self.repetitions < 0:
            raise ValueError(f"repetitions must be >= 0, got {self.repetitions}")
        if self.interval_days < 0:
            raise ValueError(f"interval_days must be >= 0, got {self.interval_days}")
        if self.ease < EASE_FLOOR:
            raise ValueError(f"ease must be >= {EASE_FLOOR}, got {self.ease}")
        _require_aware(self.due_at, name="due_at")
        if self.last_reviewed_at is not None:
            _require_aware(self.last_reviewed_at, name="last_reviewed_at")


def initial_state(*, now: datetime, first_due_days: int = 1) -> CardState:
    """Return the state of a freshly enrolled card, first due ``first_due_days`` after ``now`` (0: due now)."""
    _require_aware(now, name="now")
    if first_due_days < 0:
        raise ValueError(f"first_due_days must be >= 0, got {first_due_days}")
    return CardState(
        repetitions=0,
        interval_days=0,
        ease=INITIAL_EASE,
        due_at=now + timedelta(days=first_due_days),
        last_reviewed_at=None,
    )


def sm2_next(*, state: CardState, grade: int, now: datetime) -> CardState:
    """Advance ``state`` by one review graded ``grade`` (0–5) at ``now``.

    1. A grade below 3 is a failed recall: repetitions restart at 0 and the card comes back in 1 day.
    2. Otherwise the interval is 1 day after the first success, 6 after the second, and then
       round(previous interval × ease) — rounded half up, as dsh-engram's ``Math.round`` does — computed with
       the ease the card had *before* this review (the usual reading of SM-2), capped at ``MAX_INTERVAL_DAYS``.
    3. The ease is updated on every grade, failures included, by EF' = EF + (0.1 − (5−q)(0.08 + (5−q)·0.02)),
       floored at 1.3. The original SuperMemo text leaves the ease alone on a failure; updating it always is what
       most implementations do, and it makes a card that keeps being forgotten come back more often.

    Reviewing before the card is due is allowed; the new interval still counts from ``now``.
    """
    _require_aware(now, name="now")
    # bool is an int subclass; a stray True would otherwise be read as grade 1.
    if isinstance(grade, bool) or not isinstance(grade, int) or not MIN_GRADE <= grade <= MAX_GRADE:
        raise ValueError(f"grade must be an integer from {MIN_GRADE} to {MAX_GRADE}, got {grade!r}")

    if grade < PASSING_GRADE:
        repetitions = 0
        interval_days = FIRST_INTERVAL_DAYS
    else:
        if state.repetitions == 0:
            interval_days = FIRST_INTERVAL_DAYS
        elif state.repetitions == 1:
            interval_days = SECOND_INTERVAL_DAYS
        else:
            grown = _round_half_up(max(state.interval_days, 1) * state.ease)
            interval_days = min(max(grown, 1), MAX_INTERVAL_DAYS)
        repetitions = state.repetitions + 1

    return CardState(
        repetitions=repetitions,
        interval_days=interval_days,
        ease=_next_ease(ease=state.ease, grade=grade),
        due_at=now + timedelta(days=interval_days),
        last_reviewed_at=now,
    )


def days_overdue(*, state: CardState, now: datetime) -> int:
    """Whole 24-hour periods since the card fell due; 0 when it is not yet due or fell due less than a day ago."""
    _require_aware(now, name="now")
    late = now - state.due_at
    return max(late.days, 0)


def _next_ease(*, ease: float, grade: int) -> float:
    miss = MAX_GRADE - grade
    updated = ease + (0.1 - miss * (0.08 + miss * 0.02))
    # Every step is a multiple of 0.02, so rounding to 2 places removes float drift and nothing else; stored
    # values stay comparable across reviews.
    return round(max(updated, EASE_FLOOR), 2)


def _round_half_up(value: float) -> int:
    # The inner round() absorbs float noise such as 16.200000000000003 or 130.49999999999997 before the
    # half-up step, so an exact .5 rounds up as intended.
    return math.floor(round(value, 6) + 0.5)


def _require_aware(value: datetime, *, name: str) -> None:
    # Naive and aware datetimes cannot be compared, so a naive one would fail later and far from its source.
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime")
