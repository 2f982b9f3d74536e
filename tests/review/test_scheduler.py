from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from review.scheduler import (
    EASE_FLOOR,
    INITIAL_EASE,
    MAX_INTERVAL_DAYS,
    CardState,
    days_overdue,
    initial_state,
    sm2_next,
)

NOW = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def _state(*, repetitions: int, interval_days: int, ease: float) -> CardState:
    return CardState(
        repetitions=repetitions,
        interval_days=interval_days,
        ease=ease,
        due_at=NOW,
        last_reviewed_at=NOW - timedelta(days=interval_days),
    )


def test_initial_state_is_due_one_day_after_enrolment_by_default() -> None:
    state = initial_state(now=NOW)

    assert state == CardState(
        repetitions=0,
        interval_days=0,
        ease=INITIAL_EASE,
        due_at=NOW + timedelta(days=1),
        last_reviewed_at=None,
    )


@pytest.mark.parametrize(("first_due_days", "expected_due"), [(0, NOW), (3, NOW + timedelta(days=3))])
def test_initial_state_honours_first_due_days(first_due_days: int, expected_due: datetime) -> None:
    assert initial_state(now=NOW, first_due_days=first_due_days).due_at == expected_due


def test_initial_state_rejects_negative_first_due_days() -> None:
    with pytest.raises(ValueError, match="first_due_days"):
        initial_state(now=NOW, first_due_days=-1)


@pytest.mark.parametrize(
    ("grade", "repetitions", "interval_days", "ease"),
    [
        (5, 1, 1, 2.6),
        (4, 1, 1, 2.5),
        (3, 1, 1, 2.36),
        (2, 0, 1, 2.18),
        (1, 0, 1, 1.96),
        (0, 0, 1, 1.7),
    ],
)
def test_first_review_of_a_new_card(grade: int, repetitions: int, interval_days: int, ease: float) -> None:
    state = sm2_next(state=initial_state(now=NOW), grade=grade, now=NOW)

    assert (state.repetitions, state.interval_days, state.ease) == (repetitions, interval_days, ease)
    assert state.due_at == NOW + timedelta(days=interval_days)
    assert state.last_reviewed_at == NOW


def test_long_run_of_fives_grows_intervals_and_stops_at_the_cap() -> None:
    # 130.5 → 131 checks half-up rounding (banker's rounding would give 130); without the cap the 11th
    # review would overflow datetime.
    expected = [
        (1, 2.6),
        (6, 2.7),
        (16, 2.8),
        (45, 2.9),
        (131, 3.0),
        (393, 3.1),
        (1218, 3.2),
        (3898, 3.3),
        (12863, 3.4),
        (MAX_INTERVAL_DAYS, 3.5),
        (MAX_INTERVAL_DAYS, 3.6),
        (MAX_INTERVAL_DAYS, 3.7),
    ]
    state = initial_state(now=NOW)
    now = NOW
    seen: list[tuple[int, float]] = []
    for _ in expected:
        state = sm2_next(state=state, grade=5, now=now)
        seen.append((state.interval_days, state.ease))
        assert state.due_at == now + timedelta(days=state.interval_days)
        now = state.due_at

    assert seen == expected
    assert state.repetitions == len(expected)


@pytest.mark.parametrize(
    ("repetitions", "interval_days", "ease", "grade", "expected_interval", "expected_ease"),
    [
        # The interval grows with the ease held *before* this review.
        (2, 6, 2.5, 4, 15, 2.5),
        (2, 6, 2.5, 3, 15, 2.36),
        (3, 15, 2.36, 3, 35, 2.22),
        (5, 100, 1.3, 5, 130, 1.4),
    ],
)
def test_passing_grade_on_a_mature_card(
    repetitions: int,
    interval_days: int,
    ease: float,
    grade: int,
    expected_interval: int,
    expected_ease: float,
) -> None:
    before = _state(repetitions=repetitions, interval_days=interval_days, ease=ease)

    after = sm2_next(state=before, grade=grade, now=NOW)

    assert after.repetitions == repetitions + 1
    assert after.interval_days == expected_interval
    assert after.ease == expected_ease


@pytest.mark.parametrize("grade", [0, 1, 2])
def test_failed_recall_resets_a_mature_card_to_one_day(grade: int) -> None:
    mature = _state(repetitions=4, interval_days=45, ease=2.9)

    after = sm2_next(state=mature, grade=grade, now=NOW)

    assert (after.repetitions, after.interval_days) == (0, 1)
    assert after.due_at == NOW + timedelta(days=1)
    assert after.ease < mature.ease


def test_grade_two_resets_and_lowers_ease_by_the_sm2_formula() -> None:
    after = sm2_next(state=_state(repetitions=4, interval_days=45, ease=2.9), grade=2, now=NOW)

    assert after == CardState(
        repetitions=0, interval_days=1, ease=2.58, due_at=NOW + timedelta(days=1), last_reviewed_at=NOW
    )


def test_card_relearns_from_the_first_step_after_a_reset() -> None:
    state = sm2_next(state=_state(repetitions=4, interval_days=45, ease=2.9), grade=1, now=NOW)
    intervals = []
    for _ in range(3):
        state = sm2_next(state=state, grade=4, now=state.due_at)
        intervals.append(state.interval_days)

    assert intervals == [1, 6, 14]  # 6 × 2.36 = 14.16


def test_ease_never_drops_below_the_floor() -> None:
    state = initial_state(now=NOW)
    eases = []
    for _ in range(4):
        state = sm2_next(state=state, grade=0, now=NOW)
        eases.append(state.ease)

    assert eases == [1.7, EASE_FLOOR, EASE_FLOOR, EASE_FLOOR]


@pytest.mark.parametrize("grade", [3, 2])
def test_grades_that_lower_ease_stop_at_the_floor(grade: int) -> None:
    after = sm2_next(state=_state(repetitions=3, interval_days=10, ease=EASE_FLOOR), grade=grade, now=NOW)

    assert after.ease == EASE_FLOOR


@pytest.mark.parametrize("grade", [-1, 6, 100, True, False, 2.5, 3.0, "3", None])
def test_invalid_grades_are_rejected(grade: Any) -> None:
    with pytest.raises(ValueError, match="grade"):
        sm2_next(state=initial_state(now=NOW), grade=grade, now=NOW)


def test_input_state_is_left_untouched() -> None:
    before = initial_state(now=NOW)

    sm2_next(state=before, grade=5, now=NOW)

    assert before == initial_state(now=NOW)


def test_schedule_keeps_the_timezone_of_now() -> None:
    tokyo = timezone(timedelta(hours=9))
    now = datetime(2026, 3, 1, 18, 0, tzinfo=tokyo)

    after = sm2_next(state=initial_state(now=now), grade=5, now=now)

    assert after.due_at == datetime(2026, 3, 2, 18, 0, tzinfo=tokyo)
    assert after.due_at.utcoffset() == timedelta(hours=9)


def test_naive_datetimes_are_rejected() -> None:
    naive = datetime(2026, 3, 1, 9, 30)

    with pytest.raises(ValueError, match="now"):
        initial_state(now=naive)
    with pytest.raises(ValueError, match="now"):
        sm2_next(state=initial_state(now=NOW), grade=5, now=naive)
    with pytest.raises(ValueError, match="due_at"):
        CardState(repetitions=0, interval_days=0, ease=2.5, due_at=naive, last_reviewed_at=None)


@pytest.mark.parametrize(
    ("field", "value"),
    [("repetitions", -1), ("interval_days", -1), ("ease", 1.29)],
)
def test_card_state_rejects_impossible_values(field: str, value: float) -> None:
    values: dict[str, Any] = {
        "repetitions": 0,
        "interval_days": 0,
        "ease": 2.5,
        "due_at": NOW,
        "last_reviewed_at": None,
    }
    values[field] = value

    with pytest.raises(ValueError, match=field):
        CardState(**values)


@pytest.mark.parametrize(
    ("due_at", "expected"),
    [
        (NOW + timedelta(days=2), 0),
        (NOW, 0),
        (NOW - timedelta(hours=23, minutes=59), 0),
        (NOW - timedelta(days=1), 1),
        (NOW - timedelta(days=3, hours=12), 3),
        (NOW - timedelta(days=400), 400),
    ],
)
def test_days_overdue_counts_whole_days_past_due(due_at: datetime, expected: int) -> None:
    state = CardState(repetitions=1, interval_days=1, ease=2.5, due_at=due_at, last_reviewed_at=None)

    assert days_overdue(state=state, now=NOW) == expected
