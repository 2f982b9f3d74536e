"""Review: write-time enrolment with lazy cards, the queue (cues only, never the body), reveal, grading (SM-2),
the due count, and exclusion from decay."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings

from memory.jobs import decay_run
from memory.models import AccessRecord
from memory.save import memory_save
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from palace.models import OpLog, Palace
from review.models import ReviewCard
from review.selectors import review_due_count, review_due_ids, review_queue
from review.services import review_enrol, review_grade, review_reveal, review_unenrol
from tests.fakes.memories import T0, make_memory

SECRET = "The staging root password rotates on the first Monday of each month."


def test_save_enrols_and_the_memory_falls_due_one_day_later(palace: Palace, alice: Any) -> None:
    saved = memory_save(palace=palace, actor=Actor.for_user(alice), content=SECRET, kind="fact", placard="Root pw rota")
    memory = saved.memory
    assert memory.review_enrolled is True
    assert not ReviewCard.objects.filter(memory=memory).exists()  # materialised lazily
    created = memory.created_at
    assert review_queue(user=alice, now=created + timedelta(hours=23)) == []
    (item,) = review_queue(user=alice, now=created + timedelta(days=3, hours=1))
    assert item.memory_id == memory.pk
    assert item.card_id is None
    assert item.coordinate == "Fact Hall#1"
    assert item.placard == "Root pw rota"
    assert item.days_overdue == 2
    assert review_due_count(user=alice, now=created + timedelta(days=3)) == 1


def test_queue_never_carries_the_body(palace: Palace, alice: Any) -> None:
    make_memory(palace, content=SECRET, placard="Root pw rota", review_enrolled=True)
    (item,) = review_queue(user=alice, now=T0 + timedelta(days=2))
    assert "password" not in repr(item)
    assert not hasattr(item, "content")


@override_settings(ATRIUM_REVIEW_FIRST_DUE_DAYS=0)
def test_first_due_days_zero_means_due_at_once(palace: Palace, alice: Any) -> None:
    make_memory(palace, review_enrolled=True)
    assert review_due_count(user=alice, now=T0) == 1


def test_backfilled_and_imported_memories_are_never_enrolled(palace: Palace, alice: Any) -> None:
    actor = Actor.for_user(alice)
    for source in ("backfill", "import"):
        saved = memory_save(palace=palace, actor=actor, content=f"{SECRET} ({source})", kind="fact", source=source)
        assert saved.memory.review_enrolled is False
    assert review_due_count(user=alice, now=T0 + timedelta(days=400)) == 0


@override_settings(ATRIUM_REVIEW_ENROL=False)
def test_enrolment_can_be_switched_off(palace: Palace, alice: Any) -> None:
    saved = memory_save(palace=palace, actor=Actor.for_user(alice), content=SECRET, kind="fact")
    assert saved.memory.review_enrolled is False


def test_grade_materialises_the_card_and_advances_sm2(palace: Palace, alice: Any) -> None:
    memory = make_memory(palace, review_enrolled=True)
    actor = Actor.for_user(alice)
    now = T0 + timedelta(days=1)
    card = review_grade(memory_id=memory.pk, grade=5, actor=actor, now=now)
    assert (card.repetitions, card.interval_days, card.due_at) == (1, 1, now + timedelta(days=1))
    now += timedelta(days=1)
    card = review_grade(memory_id=card.memory_id, grade=4, actor=actor, now=now)
    assert (card.repetitions, card.interval_days) == (2, 6)
    now += timedelta(days=6)
    card = review_grade(memory_id=memory.pk, grade=5, actor=actor, now=now)
    assert card.interval_days == 16  # round(6 × 2.6) with the ease before this review
    card = review_grade(memory_id=card.memory_id, grade=1, actor=actor, now=now)  # a failed recall resets
    assert (card.repetitions, card.interval_days) == (0, 1)
    card.refresh_from_db()
    assert card.last_grade == 1
    grades = OpLog.objects.filter(op="review.grade", target_id=memory.pk).order_by("pk")
    assert [g.detail["grade"] for g in grades] == [5, 4, 5, 1]
    assert ReviewCard.objects.filter(memory=memory).count() == 1


def test_graded_card_leaves_the_queue_until_due_again(palace: Palace, alice: Any) -> None:
    memory = make_memory(palace, review_enrolled=True)
    now = T0 + timedelta(days=2)
    assert review_due_count(user=alice, now=now) == 1
    review_grade(memory_id=memory.pk, grade=5, actor=Actor.for_user(alice), now=now)
    assert review_due_count(user=alice, now=now) == 0
    (item,) = review_queue(user=alice, now=now + timedelta(days=3))
    assert item.card_id is not None
    assert item.days_overdue == 2


@pytest.mark.parametrize("grade", [-1, 6, True, "5", 2.5])
def test_bad_grades_are_refused_and_nothing_stored(palace: Palace, alice: Any, grade: Any) -> None:
    memory = make_memory(palace, review_enrolled=True)
    with pytest.raises(InvalidInput, match="grade"):
        review_grade(memory_id=memory.pk, grade=grade, actor=Actor.for_user(alice), now=T0)
    assert not ReviewCard.objects.exists()


def test_grade_needs_write_access_outsider_sees_not_found(project: Palace, alice: Any, bob: Any, charlie: Any) -> None:
    memory = make_memory(project, review_enrolled=True)
    with pytest.raises(NotFound):
        review_grade(memory_id=memory.pk, grade=5, actor=Actor.for_user(charlie), now=T0)
    with pytest.raises(PermissionDenied):
        review_grade(memory_id=memory.pk, grade=5, actor=Actor.for_user(bob), now=T0)  # a viewer
    assert review_grade(memory_id=memory.pk, grade=5, actor=Actor.for_user(alice), now=T0).repetitions == 1  # control


def test_queue_and_count_are_scoped_to_readable_palaces(project: Palace, alice: Any, charlie: Any) -> None:
    make_memory(project, review_enrolled=True)
    now = T0 + timedelta(days=2)
    assert review_due_count(user=alice, now=now) == 1
    assert review_due_count(user=charlie, now=now) == 0
    assert review_queue(user=charlie, now=now) == []
    with pytest.raises(NotFound):
        review_queue(user=charlie, palace_ids=[project.pk], now=now)


def test_due_ids_follow_the_queue_order_and_scope(project: Palace, alice: Any, charlie: Any) -> None:
    older = make_memory(project, review_enrolled=True, created_at=T0 - timedelta(days=3))
    newer = make_memory(project, review_enrolled=True)
    graded = make_memory(project, review_enrolled=True, created_at=T0 - timedelta(days=1))
    review_grade(memory_id=graded.pk, grade=1, actor=Actor.for_user(alice), now=T0)  # a card, due again on T0 + 1 day
    make_memory(project, review_enrolled=True, status="forgotten")
    now = T0 + timedelta(days=2)

    queue = [item.memory_id for item in review_queue(user=alice, now=now)]
    assert queue == [older.pk, graded.pk, newer.pk] or queue == [older.pk, newer.pk, graded.pk]
    assert review_due_ids(user=alice, now=now) == queue
    assert review_due_ids(user=alice, now=now, limit=1) == queue[:1]
    assert review_due_ids(user=charlie, now=now) == []  # the outsider, beside alice's control above
    with pytest.raises(NotFound):
        review_due_ids(user=charlie, palace_ids=[project.pk], now=now)


def test_superseded_or_forgotten_memories_leave_the_queue(palace: Palace, alice: Any) -> None:
    make_memory(palace, review_enrolled=True, status="forgotten")
    make_memory(palace, review_enrolled=True, status="superseded")
    kept = make_memory(palace, review_enrolled=True)
    assert [i.memory_id for i in review_queue(user=alice, now=T0 + timedelta(days=2))] == [kept.pk]


def test_reveal_returns_the_body_and_records_an_access(palace: Palace, alice: Any, charlie: Any) -> None:
    memory = make_memory(palace, content=SECRET, review_enrolled=True)
    with pytest.raises(NotFound):
        review_reveal(user=charlie, memory_id=memory.pk)
    revealed = review_reveal(user=alice, memory_id=memory.pk)
    assert revealed.memory.content == SECRET
    assert revealed.due_at == T0 + timedelta(days=1)
    assert AccessRecord.objects.filter(memory=memory, via="review", user=alice).count() == 1


def test_enrol_and_unenrol_explicitly(palace: Palace, alice: Any) -> None:
    actor = Actor.for_user(alice)
    memory = make_memory(palace, source_kind="backfill")
    now = T0 + timedelta(days=40)
    review_enrol(memory_id=memory.pk, actor=actor, now=now)
    memory.refresh_from_db()
    assert memory.review_enrolled is True
    assert review_due_count(user=alice, now=now) == 1
    review_unenrol(memory_id=memory.pk, actor=actor, reason="not worth practising")
    memory.refresh_from_db()
    assert memory.review_enrolled is False
    assert review_due_count(user=alice, now=now) == 0
    assert list(
        OpLog.objects.filter(target_kind="memory", target_id=memory.pk).values_list("op", flat=True).order_by("pk")
    ) == [
        "review.enrol",
        "review.unenrol",
    ]
    archived = make_memory(palace, status="archived")
    with pytest.raises(Conflict):
        review_enrol(memory_id=archived.pk, actor=actor, now=now)


def test_memories_under_review_are_never_decayed(palace: Palace) -> None:
    stale = {"importance": 0.1, "created_at": T0 - timedelta(days=90)}
    reviewed = make_memory(palace, review_enrolled=True, **stale)
    plain = make_memory(palace, **stale)
    result = decay_run(now=T0)
    assert result.archived == [plain.pk]
    reviewed.refresh_from_db()
    assert reviewed.status == "active"
