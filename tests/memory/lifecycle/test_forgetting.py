"""Forgetting that works (issue 13): importance by rule, tombstones, confidence earned by cited answers and entering
the rank, and decay by low importance or low confidence — never what is under review."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
import time_machine
from django.core.management import call_command
from django.test import override_settings

from memory.jobs import decay_run
from memory.lifecycle import memory_forget, memory_report, memory_restore
from memory.models import Memory, SearchBatch
from memory.save import SaveResult, importance_for
from memory.search import evidence_assess
from memory.search.arms import Row
from memory.search.rank import Candidate, rank
from palace.actors import Actor
from palace.errors import Conflict
from palace.models import OpLog, Palace
from tests.fakes.memories import T0, make_memory

Save = Callable[..., SaveResult]
DAY = timedelta(days=1)


# --- importance ------------------------------------------------------------------------------------------------------


def test_importance_rule_by_kind_and_words_and_the_callers_value_wins() -> None:
    assert importance_for(kind="decision", content="We use PostgreSQL.").value == 0.7
    assert importance_for(kind="episode", content="We talked about lunch.").value == 0.4
    assert importance_for(kind="fact", content="You must never push to main.").value == 0.65
    hedged = importance_for(kind="episode", content="Maybe we try the blue theme for now.")
    assert hedged.value == pytest.approx(0.25) and "hedges" in hedged.rule
    assert importance_for(kind="preference", content="我必须用绿茶").value == pytest.approx(0.8)
    explicit = importance_for(kind="decision", content="You must never push to main.", explicit=0.1)
    assert explicit.value == 0.1 and explicit.rule == "caller"


def test_save_applies_the_rule_and_a_faint_memory_is_not_enrolled_for_review(save: Save) -> None:
    decision = save("We always deploy from the release branch.", kind="decision").memory
    faint = save("Maybe we try the blue theme for the dashboard today.", kind="episode").memory
    chosen = save("The staging database is called atlas-staging.", importance=0.9).memory
    assert decision is not None and faint is not None and chosen is not None
    assert decision.importance == pytest.approx(0.85) and decision.review_enrolled is True
    assert faint.importance == pytest.approx(0.25) and faint.review_enrolled is False  # may fade
    assert chosen.importance == 0.9
    op = OpLog.objects.get(op="memory.save", target_id=faint.pk)
    assert op.detail["importance"] == pytest.approx(0.25)


# --- tombstones ------------------------------------------------------------------------------------------------------


def test_saving_a_forgotten_memorys_content_defers_with_its_epitaph_and_restore_brings_the_original_back(
    save: Save, alice_actor: Actor
) -> None:
    first = save("The API server listens on port 8000.").memory
    assert first is not None
    memory_forget(memory_id=first.pk, actor=alice_actor, reason="moved behind the gateway")
    count = Memory.objects.count()

    again = save("The API server listens on port 8000.")
    assert again.disposition == "defer" and again.memory is None
    assert again.forgotten == first.pk and not again.restored
    assert f"#{first.pk}" in again.hint and "moved behind the gateway" in again.hint
    assert Memory.objects.count() == count  # nothing silently brought back, no copy
    first.refresh_from_db()
    assert first.status == "forgotten"

    restored = save("The API server listens on port 8000.", restore=True)
    assert restored.restored and restored.memory is not None and restored.memory.pk == first.pk
    assert Memory.objects.count() == count  # the original, not a copy
    first.refresh_from_db()
    assert first.status == "active" and first.epitaph == ""
    op = OpLog.objects.get(op="memory.restore", target_id=first.pk)
    assert op.detail["via"] == "save" and op.detail["epitaph"] == "moved behind the gateway"


def test_a_tombstone_needs_the_merge_rule_and_the_same_palace(save: Save, alice_actor: Actor, project: Palace) -> None:
    first = save("The API server listens on port 8000.").memory
    assert first is not None
    memory_forget(memory_id=first.pk, actor=alice_actor, reason="wrong")
    # A different number is not a restatement: a new memory, no tombstone.
    other = save("The API server listens on port 8001.")
    assert other.disposition == "accept" and other.forgotten is None
    # Another palace does not see this palace's tombstones (control: the same text in alice's palace defers).
    elsewhere = save("The API server listens on port 8000.", palace=project)
    assert elsewhere.disposition == "accept" and elsewhere.forgotten is None
    assert save("The API server listens on port 8000.").forgotten == first.pk


# --- confidence ------------------------------------------------------------------------------------------------------


def _batch(user: Any, palace: Palace, ids: list[int]) -> SearchBatch:
    return SearchBatch.objects.create(
        handle="b_" + secrets.token_urlsafe(12),
        user=user,
        query="q",
        refs={f"r{i + 1}": pk for i, pk in enumerate(ids)},
        palace_ids=[palace.pk],
    )


def _assess(user: Any, batch: SearchBatch, refs: list[str], *, adequate: bool = True) -> Any:
    return evidence_assess(
        user=user,
        actor=Actor.for_user(user),
        batch=batch.handle,
        evidence_refs=refs,
        adequate=adequate,
        next_strategy="answer",
    )


def test_a_cited_sufficient_assess_reinforces_confidence_once_per_search(alice: Any, alice_palace: Palace) -> None:
    cited, uncited = make_memory(alice_palace, "cited"), make_memory(alice_palace, "uncited")
    weak = _batch(alice, alice_palace, [cited.pk, uncited.pk])
    _assess(alice, weak, ["r1"], adequate=False)  # insufficient: nothing earned
    cited.refresh_from_db()
    assert cited.confidence == 0.7
    batch = _batch(alice, alice_palace, [cited.pk, uncited.pk])
    assert _assess(alice, batch, ["r1"]).sufficient
    with pytest.raises(Conflict):  # the same search cited again is refused and earns nothing more
        _assess(alice, batch, ["r1"])
    cited.refresh_from_db()
    uncited.refresh_from_db()
    assert cited.confidence == pytest.approx(0.75)
    assert uncited.confidence == 0.7
    op = OpLog.objects.get(op="memory.reinforce")
    assert op.target_id == cited.pk and op.detail["confidence"] == pytest.approx(0.75)


def test_a_viewers_sufficient_assess_leaves_a_projects_confidence_alone(
    alice: Any, bob: Any, project: Palace, alice_palace: Palace
) -> None:
    """Confidence is shared ranking state: bob (a viewer of the project) earns nothing for its memories, while
    alice's verdict on the same memory does (the positive control)."""
    shared = make_memory(project, "the project deploys on Fridays")
    assert _assess(bob, _batch(bob, project, [shared.pk]), ["r1"]).sufficient
    shared.refresh_from_db()
    assert shared.confidence == 0.7
    assert not OpLog.objects.filter(op="memory.reinforce", target_id=shared.pk).exists()
    _assess(alice, _batch(alice, project, [shared.pk]), ["r1"])
    shared.refresh_from_db()
    assert shared.confidence == pytest.approx(0.75)


def test_reinforcement_is_capped_at_one(alice: Any, alice_palace: Palace) -> None:
    m = make_memory(alice_palace, "sure thing", confidence=0.98)
    _assess(alice, _batch(alice, alice_palace, [m.pk]), ["r1"])
    m.refresh_from_db()
    assert m.confidence == 1.0


def _candidate(memory_id: int, confidence: float) -> Candidate:
    row = Row(
        id=memory_id,
        hit_count=0,
        touched=T0 - 3650 * DAY,
        speaker="",
        created_at=T0 - 3650 * DAY + memory_id * DAY,
        episode="",
        author=memory_id,
        cosine=0.9,
        lexical=0.5,
        confidence=confidence,
    )
    return Candidate(row=row, ranks={"sem": 1, "lex": 1}, cosine=0.9, lexical=0.5)


def test_confidence_orders_equally_relevant_memories_and_the_start_value_is_neutral() -> None:
    # Memory 2 would win the tie (newer); its reported failures put it below memory 1.
    ranked = rank({1: _candidate(1, 0.7), 2: _candidate(2, 0.5)}, edges=[], named=[], now=T0)
    assert [c.memory_id for c in ranked] == [1, 2]
    neutral = rank({1: _candidate(1, 0.7), 2: _candidate(2, 0.7)}, edges=[], named=[], now=T0)
    assert [c.memory_id for c in neutral] == [2, 1]  # control: equal confidences, the tie-break decides
    assert neutral[0].score == neutral[1].score == pytest.approx(neutral[0].fused)  # factor exactly 1 at 0.7
    with override_settings(ATRIUM_CONFIDENCE_WEIGHT=0.0):
        off = rank({1: _candidate(1, 0.7), 2: _candidate(2, 0.5)}, edges=[], named=[], now=T0)
    assert [c.memory_id for c in off] == [2, 1]


# --- decay -----------------------------------------------------------------------------------------------------------


def test_decay_archives_low_confidence_memories_too_and_says_why(alice_palace: Palace, alice_actor: Actor) -> None:
    doubted = make_memory(alice_palace, "flaky advice", importance=0.6, created_at=T0 - 40 * DAY)
    trusted = make_memory(alice_palace, "solid advice", importance=0.6, created_at=T0 - 40 * DAY)
    for _ in range(3):
        memory_report(memory_id=doubted.pk, actor=alice_actor, outcome="failure")
    dry = decay_run(now=T0, dry_run=True)
    assert dry.candidates == [doubted.pk]  # control: trusted, as old and as important, stays
    assert "confidence 0.40 below 0.50" in dry.why[doubted.pk]
    assert "importance" not in dry.why[doubted.pk]
    assert decay_run(now=T0).archived == [doubted.pk]
    trusted.refresh_from_db()
    assert trusted.status == "active"


def test_decay_never_touches_a_memory_with_an_active_review_card(alice_palace: Palace) -> None:
    from review.models import ReviewCard

    carded = make_memory(alice_palace, "practised", importance=0.1, created_at=T0 - 90 * DAY)
    ReviewCard.objects.create(memory=carded, palace=alice_palace, due_at=T0 - DAY, active=True)
    plain = make_memory(alice_palace, "not practised", importance=0.1, created_at=T0 - 90 * DAY)
    assert decay_run(now=T0).archived == [plain.pk]


def test_decay_dry_run_command_shows_what_would_go_and_why(alice_palace: Palace) -> None:
    stale = make_memory(alice_palace, importance=0.1, created_at=T0 - 400 * DAY)
    out = StringIO()
    with time_machine.travel(T0, tick=False):
        call_command("decay", "--dry-run", stdout=out)
    text = out.getvalue()
    assert f"#{stale.pk}: decayed: never accessed" in text and "importance 0.10 below 0.30" in text
    stale.refresh_from_db()
    assert stale.status == "active"


def test_decay_with_time_moved_forward_archives_what_faded_and_restore_brings_it_back(
    save: Save, alice_actor: Actor
) -> None:
    """Saved through the pipeline as MCP saves; time moves forward 45 days; decay runs on the real clock."""
    with time_machine.travel(T0, tick=False):
        faint = save("Maybe we try the blue theme for the dashboard today.", kind="episode", source="mcp").memory
        practised = save(
            "Perhaps the office moves to the fourth floor.", kind="episode", source="mcp", enrol_review=True
        ).memory
        important = save("We must always tag releases before deploying.", kind="decision", source="mcp").memory
    with time_machine.travel(T0 + 40 * DAY, tick=False):
        fresh = save("Maybe the retro moves to Thursdays this week.", kind="episode", source="mcp").memory
    assert faint and practised and important and fresh
    with time_machine.travel(T0 + 45 * DAY, tick=False):
        result = decay_run()
    assert result.archived == [faint.pk]
    for m in (faint, practised, important, fresh):
        m.refresh_from_db()
    assert faint.status == "archived" and "importance 0.25 below 0.30" in faint.epitaph
    assert practised.status == important.status == fresh.status == "active"
    restored = memory_restore(memory_id=faint.pk, actor=alice_actor, reason="still planned")
    assert restored.status == "active"
    assert OpLog.objects.get(op="memory.decay", target_id=faint.pk).reason.startswith("decayed:")
