"""The worker's service (capture/processing.py), in-process: what a captured turn becomes (an episode and
low-confidence facts through the write pipeline), anti-echo end to end, failures left pending and replayed, the
session summary, backfilled sessions, and the privacy of capture's rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from capture import processing
from capture.models import CaptureSession, CaptureTurn
from capture.processing import MAX_ATTEMPTS, capture_session_process
from capture.tasks import capture_replay
from memory.models import Memory
from palace import rls
from palace.models import OpLog, Palace

PREFERENCE = "From now on, always use tabs for indentation in the Go services."


def _session(key: str) -> CaptureSession:
    return CaptureSession.objects.get(key=key)


def _post(client: Any, key: str, *turns: dict[str, Any], **extra: Any) -> dict[str, Any]:
    status, answer = client.post({"session": key, "turns": list(turns), **extra})
    assert status == 202, answer
    return answer


def _user(index: int, text: str) -> dict[str, Any]:
    return {"index": index, "role": "user", "text": text, "at": "2026-03-02T09:30:00Z"}


def test_a_user_turn_becomes_an_episode_with_its_session_turn_and_time_and_low_confidence_facts(
    alice: Any, palace: Palace, capture_as: Callable[..., Any]
) -> None:
    _post(capture_as(alice), "s-one", _user(0, PREFERENCE))
    result = capture_session_process(session_id=_session("s-one").pk)
    assert result.done == 1
    turn = CaptureTurn.objects.get(session__key="s-one")
    assert turn.state == "done" and turn.method in ("rules", "llm") and turn.processed_at is not None
    saved = {m.pk: m for m in Memory.objects.filter(pk__in=turn.memory_ids)}
    assert set(turn.memory_ids) == set(saved)
    (episode,) = [m for m in saved.values() if m.kind == "episode"]
    assert (episode.source_session, episode.source_turn, episode.source_kind) == ("s-one", "0", "capture")
    assert episode.occurred_at.isoformat().startswith("2026-03-02T09:30")
    assert episode.created_by_id == alice.pk and episode.created_by_token_id is not None  # the sender's token
    facts = [m for m in saved.values() if m.kind != "episode"]
    assert facts, "the rules find the preference"
    assert all(m.confidence <= processing.FACT_CONFIDENCE for m in facts)
    op = OpLog.objects.get(op="capture.turn", target_id=turn.pk)
    assert op.palace_id == palace.pk and op.detail["state"] == "done" and op.detail["memories"] == turn.memory_ids
    assert op.detail["method"] == turn.method  # the label says how it was produced


def test_a_restatement_in_a_later_session_reinforces_instead_of_duplicating(
    alice: Any, palace: Palace, capture_as: Callable[..., Any]
) -> None:
    client = capture_as(alice)
    _post(client, "s-a", _user(0, PREFERENCE))
    capture_session_process(session_id=_session("s-a").pk)
    facts = list(Memory.objects.filter(palace=palace, source_session="s-a").exclude(kind="episode"))
    assert facts
    before = {m.pk: m.confidence for m in facts}
    _post(client, "s-b", _user(0, PREFERENCE))
    capture_session_process(session_id=_session("s-b").pk)
    turn = CaptureTurn.objects.get(session__key="s-b")
    op = OpLog.objects.get(op="capture.turn", target_id=turn.pk)
    assert "merge" in op.detail["dispositions"]
    assert not Memory.objects.filter(palace=palace, source_session="s-b").exclude(kind="episode").exists()
    merged = Memory.objects.filter(pk__in=before)
    assert any(m.confidence > before[m.pk] for m in merged)  # reinforced
    assert OpLog.objects.filter(op="memory.merge", target_id__in=list(before)).exists()


def test_atrium_recall_inside_a_turn_is_neither_stored_nor_saved(
    alice: Any, palace: Palace, capture_as: Callable[..., Any]
) -> None:
    recalled = "The vault combination is kept by Marguerite in the blue binder"
    text = (
        "<atrium_memory_context>\n"
        f"- [Fact Hall#2] {recalled}\n"
        "</atrium_memory_context>\n"
        "Called mcp__atrium__memory_search:\n"
        "<atrium_memory_context>\n"
        "1. id=12 ref=m1 [Fact Hall#3] Quarterly audits are run by the Lisbon office\n"
        "</atrium_memory_context>\n"
        "We decided to move the standup to 9:30 starting next week."
    )
    turn = {"index": 0, "role": "user", "text": text}
    tool = {"index": 1, "role": "tool", "tool": "mcp__atrium__memory_search", "text": '{"hits": [{"content": "x"}]}'}
    answer = _post(capture_as(alice), "s-echo", turn, tool)
    assert "memory_search" in answer["echoes"]  # the answer names what anti-echo removed
    assert "memory_context" in answer["echoes"]
    stored = CaptureTurn.objects.get(session__key="s-echo", index=0)
    assert "Marguerite" not in stored.text and "Lisbon" not in stored.text
    assert "[atrium memory_search output omitted]" in stored.text
    assert "standup" in stored.text  # the positive control: the turn's own words are kept
    capture_session_process(session_id=_session("s-echo").pk)
    contents = " ".join(Memory.objects.filter(palace=palace).values_list("content", flat=True))
    assert "Marguerite" not in contents and "Lisbon" not in contents
    assert "standup" in contents


def test_a_failure_leaves_the_turn_pending_and_the_next_call_replays_it(
    alice: Any, palace: Palace, capture_as: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = capture_as(alice)
    _post(client, "s-fail", _user(0, PREFERENCE))

    def broken(**kwargs: Any) -> Any:
        raise RuntimeError("model exploded")

    real = processing.extract_turn
    monkeypatch.setattr(processing, "extract_turn", broken)
    result = capture_session_process(session_id=_session("s-fail").pk)
    assert (result.done, result.retry) == (0, 1)
    turn = CaptureTurn.objects.get(session__key="s-fail")
    assert (turn.state, turn.attempts) == ("pending", 1) and "model exploded" in turn.error
    assert not Memory.objects.filter(source_session="s-fail").exists()
    assert not OpLog.objects.filter(op="capture.turn", target_id=turn.pk).exists()

    monkeypatch.setattr(processing, "extract_turn", real)
    answer = _post(client, "s-fail", _user(0, PREFERENCE), _user(1, "Remember that the CI cache lives in S3."))
    assert (answer["stored"], answer["duplicates"], answer["pending"], answer["queued"]) == (1, 1, 2, True)
    result = capture_session_process(session_id=_session("s-fail").pk)
    assert result.done == 2
    turn.refresh_from_db()
    assert (turn.state, turn.attempts, turn.error) == ("done", 2, "")
    assert Memory.objects.filter(source_session="s-fail", source_turn="0", kind="episode").count() == 1


def test_the_beat_replay_takes_pending_turns_and_gives_up_after_the_last_attempt(
    alice: Any, capture_as: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _post(capture_as(alice), "s-replay", _user(0, PREFERENCE))
    _post(capture_as(alice), "s-give-up", _user(0, "We decided to pin Postgres to version 18."))
    CaptureTurn.objects.filter(session__key="s-give-up").update(attempts=MAX_ATTEMPTS - 1)
    real = processing.extract_turn

    def broken_for_one(**kwargs: Any) -> Any:
        if "Postgres" in kwargs["text"]:
            raise RuntimeError("still broken")
        return real(**kwargs)

    monkeypatch.setattr(processing, "extract_turn", broken_for_one)
    assert capture_replay() == {"sessions": 2}
    assert CaptureTurn.objects.get(session__key="s-replay").state == "done"
    given_up = CaptureTurn.objects.get(session__key="s-give-up")
    assert (given_up.state, given_up.attempts) == ("failed", MAX_ATTEMPTS)
    assert capture_replay() == {"sessions": 0}  # nothing pending is left


def test_the_session_gets_a_summary_with_its_label_and_an_op_row(
    alice: Any, palace: Palace, capture_as: Callable[..., Any]
) -> None:
    _post(capture_as(alice), "s-sum", _user(0, "Let's migrate the billing service to the new queue."))
    result = capture_session_process(session_id=_session("s-sum").pk)
    session = _session("s-sum")
    assert session.summary and result.summary == session.summary
    assert session.summary_method in ("rules", "llm") and session.summary_turns == 1
    op = OpLog.objects.get(op="capture.session", target_id=session.pk)
    assert (op.palace_id, op.detail["method"]) == (palace.pk, session.summary_method)
    capture_session_process(session_id=session.pk)  # nothing new: not summarised again
    assert OpLog.objects.filter(op="capture.session", target_id=session.pk).count() == 1


def test_a_backfilled_session_saves_with_source_backfill_and_never_enrols_in_review(
    alice: Any, palace: Palace, settings: Any
) -> None:
    settings.ATRIUM_REVIEW_ENROL = True
    session = CaptureSession.objects.create(user=alice, palace=palace, key="s-back", source="backfill", mode="light")
    CaptureTurn.objects.create(session=session, index=0, role="user", text=PREFERENCE)
    live = CaptureSession.objects.create(user=alice, palace=palace, key="s-live", mode="light")
    CaptureTurn.objects.create(session=live, index=0, role="user", text="We decided to ship the mobile app in May.")
    capture_session_process(session_id=session.pk)
    capture_session_process(session_id=live.pk)
    back = Memory.objects.filter(source_session="s-back")
    assert back and {m.source_kind for m in back} == {"backfill"}
    assert not any(m.review_enrolled for m in back)
    live_memories = Memory.objects.filter(source_session="s-live")
    assert {m.source_kind for m in live_memories} == {"capture"}  # the control: a live capture is "capture"


def test_another_user_never_sees_a_capture_session_or_its_turns(
    alice: Any, bob: Any, charlie: Any, project: Palace, capture_as: Callable[..., Any]
) -> None:
    """Even bob, a member of the project alice captures into, sees none of her sessions or turns: they are hers."""
    from tests.conftest import PROJECT_ORIGIN

    answer = _post(capture_as(alice), "s-private", _user(0, PREFERENCE), origin=PROJECT_ORIGIN)
    assert answer["palace"]["id"] == project.pk

    def visible(table: str) -> int:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {table}")  # noqa: S608 - a fixed table name
            return int(cursor.fetchone()[0])

    with rls.acting_as(alice):  # the positive control: the owner sees hers
        assert CaptureSession.objects.filter(key="s-private").count() == 1
        assert visible("capture_captureturn") == 1
    for outsider in (bob, charlie):
        with rls.acting_as(outsider):
            assert CaptureSession.objects.filter(key="s-private").count() == 0
            assert (visible("capture_capturesession"), visible("capture_captureturn")) == (0, 0)
