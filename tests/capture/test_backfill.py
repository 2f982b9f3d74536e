"""The backfill service in process: the estimate with the palace each session goes to, a run over the test
transcripts (stored once, saved with source backfill, never in today's review queue, summarised), importing twice,
pause and resume, and bad input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from capture.backfill import (
    ALREADY_IMPORTED,
    backfill_estimate,
    backfill_pause,
    backfill_read_paths,
    backfill_read_uploads,
    backfill_resume,
    backfill_run_get,
    backfill_run_process,
    backfill_start,
)
from capture.importers import BackfillRules
from capture.models import BackfillRun, CaptureSession, CaptureTurn
from memory.models import Memory
from memory.save import memory_save
from palace.actors import Actor
from palace.errors import InvalidInput, NotFound
from palace.models import OpLog, Palace
from review.selectors import review_queue

TRANSCRIPTS = Path(__file__).resolve().parent / "transcripts"
EN, ZH = "3f6c2a1e-5b7d-4c8e-9a0f-1d2e3c4b5a61", "8a2d4e6f-1c3b-4a5d-8e7f-0a1b2c3d4e52"
BOB_SESSION = "c4e8a2b6-9d1f-4e3a-b5c7-2f4e6a8c0d13"
NOW = datetime(2025, 6, 13, 12, 0, tzinfo=UTC)
# The demo project (tests/conftest.py `project`, alice owns it) for alice's folder; bob's folder maps to a project
# alice is not a member of.
RULES = BackfillRules(
    window_days=0,
    mappings={"/home/alice/src/demo": "github.com/atrium-test/demo", "/home/bob/work/infra": "github.com/acme/infra"},
)


def _claude_code() -> list[Any]:
    return backfill_read_paths(paths=[TRANSCRIPTS / "claude-code"]).sessions


def test_the_estimate_routes_a_members_project_there_and_a_strangers_project_to_the_personal_palace(
    alice: Any, project: Palace
) -> None:
    plan = backfill_estimate(user=alice, sessions=_claude_code(), rules=RULES, use_git=False, now=NOW).as_dict()

    by_session = {s["session"]: s for s in plan["per_session"]}
    assert by_session[EN]["palace"] == {"id": project.pk, "name": project.label, "chosen": "project"}
    assert "owner of github.com/atrium-test/demo" in by_session[EN]["why"]
    personal = Palace.objects.get(personal_owner=alice)
    assert by_session[BOB_SESSION]["palace"]["id"] == personal.pk
    assert by_session[BOB_SESSION]["palace"]["chosen"] == "personal"
    assert "not a member of github.com/acme/infra" in by_session[BOB_SESSION]["why"]
    assert by_session[f"{BOB_SESSION}/a7f3c91"]["skip_reason"] == "sidechain"
    assert plan["skip_reasons"] == {"sidechain": 2}
    assert plan["turns"] == 9 + 9 + 6
    assert plan["method"].startswith("zero-cost estimate")
    assert not CaptureSession.objects.exists()  # an estimate stores nothing


@pytest.mark.django_db(transaction=True)
def test_a_run_stores_each_turn_once_saves_as_backfill_and_summarises_each_session(alice: Any, project: Palace) -> None:
    read = backfill_read_paths(paths=[TRANSCRIPTS / "claude-code"])
    run = backfill_start(user=alice, sessions=read.sessions, rules=RULES, files=read.files, use_git=False, now=NOW)
    assert run.state == "queued" and run.counts["turns_total"] == 24 and run.counts["turns_done"] == 0
    sessions = CaptureSession.objects.filter(backfill_run=run)
    assert {s.key for s in sessions} == {EN, ZH, BOB_SESSION}
    assert {s.source for s in sessions} == {"backfill"}
    assert sessions.get(key=EN).palace_id == project.pk

    result = backfill_run_process(run_id=run.pk, batch_turns=10)

    run.refresh_from_db()
    assert (result.state, run.state, result.batches) == ("done", "done", 3)
    assert run.counts["turns_done"] == 24 and run.counts["eta_seconds"] == 0
    assert run.counts["skipped"]["light mode keeps user turns only"] == 13  # the assistant turns
    assert run.counts["memories"] > 0 and run.counts["episodes"] == 11  # the user turns (one says nothing new)
    assert not CaptureTurn.objects.filter(session__backfill_run=run, state="pending").exists()
    saved = Memory.objects.filter(source_session__in=[EN, ZH, BOB_SESSION])
    assert saved.count() == run.counts["memories"]
    assert {m.source_kind for m in saved} == {"backfill"}
    assert {m.embedding is not None for m in saved} == {True}
    episodes = saved.filter(kind="episode").values_list("source_session", "source_turn")
    assert len(episodes) == len(set(episodes))  # one episode per (session, turn)
    for session in sessions:
        session.refresh_from_db()
        assert session.summary and session.summary_method == "rules"  # labelled: no model is configured
    phases = list(OpLog.objects.filter(op="backfill.run", target_id=run.pk).order_by("pk").values_list("reason"))
    assert phases == [("started",), ("finished",)]
    assert OpLog.objects.filter(op="capture.turn", detail__run=run.pk).count() == 24


@pytest.mark.django_db(transaction=True)
def test_backfilled_memories_never_enter_todays_review_queue(alice: Any) -> None:
    personal = Palace.objects.get(personal_owner=alice)
    control = memory_save(
        palace=personal,
        actor=Actor.for_user(alice),
        content="The staging database listens on port 6543 since the March migration.",
        kind="fact",
        importance=0.9,
    ).memory
    assert control is not None
    read = backfill_read_paths(paths=[TRANSCRIPTS / "codex"])
    run = backfill_start(user=alice, sessions=read.sessions, rules=BackfillRules(window_days=0), files=read.files)
    backfill_run_process(run_id=run.pk)

    backfilled = Memory.objects.filter(source_kind="backfill")
    assert backfilled.exists() and not backfilled.filter(review_enrolled=True).exists()
    queue = {item.memory_id for item in review_queue(user=alice, now=timezone.now() + timedelta(days=60))}
    assert control.pk in queue  # the control: a deliberate save is due by then
    assert not queue & set(backfilled.values_list("pk", flat=True))


@pytest.mark.django_db(transaction=True)
def test_importing_the_same_transcripts_twice_stores_nothing_the_second_time(alice: Any) -> None:
    read = backfill_read_paths(paths=[TRANSCRIPTS / "codex"])
    rules = BackfillRules(window_days=0)
    first = backfill_start(user=alice, sessions=read.sessions, rules=rules, files=read.files)
    backfill_run_process(run_id=first.pk)
    turns, memories = CaptureTurn.objects.count(), Memory.objects.count()
    assert turns == 4 and memories > 0

    again = backfill_start(user=alice, sessions=read.sessions, rules=rules, files=read.files)
    assert again.counts["turns_total"] == 0 and again.counts["skipped"] == {ALREADY_IMPORTED: 4}
    backfill_run_process(run_id=again.pk)

    again.refresh_from_db()
    assert again.state == "done"
    assert (CaptureTurn.objects.count(), Memory.objects.count()) == (turns, memories)
    assert CaptureSession.objects.get().backfill_run_id == first.pk  # the first run keeps its session


@pytest.mark.django_db(transaction=True)
def test_a_paused_run_stops_between_batches_and_resumes_where_it_stopped(alice: Any, bob: Any) -> None:
    read = backfill_read_paths(paths=[TRANSCRIPTS / "claude-code"])
    run = backfill_start(user=alice, sessions=read.sessions, rules=RULES, files=read.files, use_git=False, now=NOW)
    with pytest.raises(NotFound):
        backfill_pause(user=bob, run_id=run.pk)  # another user's run is not there for them
    backfill_pause(user=alice, run_id=run.pk)

    assert backfill_run_process(run_id=run.pk).state == "paused"
    run.refresh_from_db()
    assert (run.state, run.pause_requested, run.counts["turns_done"]) == ("paused", False, 0)
    with pytest.raises(InvalidInput, match="only a queued or running run can pause"):
        backfill_pause(user=alice, run_id=run.pk)

    assert backfill_resume(user=alice, run_id=run.pk).state == "queued"
    assert backfill_run_process(run_id=run.pk).state == "done"
    run.refresh_from_db()
    assert run.counts["turns_done"] == run.counts["turns_total"] == 24
    reasons = list(OpLog.objects.filter(op="backfill.run", target_id=run.pk).order_by("pk").values_list("reason"))
    assert reasons == [("pause requested",), ("started",), ("paused",), ("resumed",), ("started",), ("finished",)]


def test_uploads_are_read_from_name_and_bytes_and_a_bad_file_is_named(alice: Any) -> None:
    name = "helpdesk-chat.json"
    read = backfill_read_uploads(uploads=[(name, (TRANSCRIPTS / "openai" / name).read_bytes())])
    assert read.uploaded and read.files == [name] and len(read.sessions) == 1

    with pytest.raises(InvalidInput, match="notes.txt") as bad:
        backfill_read_uploads(uploads=[("notes.txt", b"just some notes")])
    assert bad.value.detail == {"field": "files"}
    with pytest.raises(InvalidInput, match="no such file") as missing:
        backfill_read_paths(paths=["/nonexistent/transcripts"])
    assert missing.value.detail == {"field": "paths"}


def test_another_users_run_answers_like_a_missing_one(alice: Any, bob: Any) -> None:
    run = BackfillRun.objects.create(user=alice)
    assert backfill_run_get(user=alice, run_id=run.pk) == run  # the control
    with pytest.raises(NotFound):
        backfill_run_get(user=bob, run_id=run.pk)


@pytest.mark.django_db(transaction=True)
def test_a_door_acting_as_the_user_starts_pauses_and_resumes_under_row_level_security(alice: Any, charlie: Any) -> None:
    from palace.rls import acting_as

    name = "helpdesk-chat.json"
    with acting_as(alice):
        read = backfill_read_uploads(uploads=[(name, (TRANSCRIPTS / "openai" / name).read_bytes())])
        rules = BackfillRules(window_days=0, include_no_cwd=True)
        run = backfill_start(user=alice, sessions=read.sessions, rules=rules, files=read.files, use_git=False)
        assert run.counts["turns_total"] == 6
        assert backfill_pause(user=alice, run_id=run.pk).pause_requested
    with acting_as(charlie):
        with pytest.raises(NotFound):
            backfill_run_get(user=charlie, run_id=run.pk)
        assert not BackfillRun.objects.filter(pk=run.pk).exists()  # the database hides it too
    assert backfill_run_process(run_id=run.pk).state == "paused"  # the worker acts as the system
    with acting_as(alice):
        assert backfill_run_get(user=alice, run_id=run.pk).state == "paused"  # the control: hers to see
        assert backfill_resume(user=alice, run_id=run.pk).state == "queued"
    assert backfill_run_process(run_id=run.pk).state == "done"
    assert CaptureSession.objects.get(backfill_run=run).palace == Palace.objects.get(personal_owner=alice)


def test_starting_a_run_stores_all_sessions_in_a_few_queries_whatever_their_number(alice: Any) -> None:
    # Storing went one capture call a session (about 11 queries each); it is one call for the import now, so the
    # queries do not grow with the sessions (the estimate's routing still asks per session).
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from ops.bench.ingest import synthetic_sessions

    rules = BackfillRules(window_days=0)
    counted = []
    for turns in (40, 160):
        sessions = synthetic_sessions(turns=turns, seed=turns)
        with CaptureQueriesContext(connection) as queries:
            run = backfill_start(user=alice, sessions=sessions, rules=rules, files=["bench"], use_git=False)
        stored = CaptureTurn.objects.filter(session__backfill_run=run)
        assert stored.count() == run.counts["turns_total"] >= turns
        assert CaptureSession.objects.filter(backfill_run=run).count() == run.counts["sessions"] == len(sessions)
        counted.append((len(sessions), len(queries), [q["sql"][:60] for q in queries]))
    (few, few_queries, _), (many, many_queries, sql) = counted
    assert many > few
    per_extra_session = (many_queries - few_queries) / (many - few)
    assert per_extra_session <= 4, (per_extra_session, sql)


def test_finished_sessions_are_summarised_together_in_a_few_queries_whatever_their_number(alice: Any) -> None:
    # A backfill summarised its finished sessions one capture call each (about 8 queries a session); they are
    # summarised together now: the same summaries, labelled, an op row each, in a number of queries that does not
    # grow with the sessions. A session whose summary already covers its done user turns is left alone.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from capture.processing import capture_sessions_summarise
    from ops.bench.ingest import synthetic_sessions

    run = backfill_start(
        user=alice,
        sessions=synthetic_sessions(turns=160, seed=7),
        rules=BackfillRules(window_days=0),
        files=["bench"],
        use_git=False,
    )
    assert backfill_run_process(run_id=run.pk).state == "done"
    sessions = list(CaptureSession.objects.filter(backfill_run=run).order_by("pk"))
    made = {s.pk: (s.summary, s.summary_method) for s in sessions}
    assert all(summary and method == "rules" for summary, method in made.values())
    CaptureSession.objects.filter(backfill_run=run).update(summary="", summary_turns=0)
    mark = OpLog.objects.order_by("-pk").values_list("pk", flat=True).first()  # the op log is append-only

    counted = []
    for group in (sessions[:4], sessions[4:]):
        with CaptureQueriesContext(connection) as queries:
            summaries = capture_sessions_summarise(session_ids=[s.pk for s in group])
        assert summaries == {s.pk: made[s.pk][0] for s in group}  # the same summary the run made
        counted.append(len(queries))
    assert len(sessions) - 4 > 4 and counted[1] <= counted[0], counted
    ops = OpLog.objects.filter(op="capture.session", target_id__in=made, pk__gt=mark).order_by("pk")
    assert [o.target_id for o in ops] == list(made)  # one each, in order
    assert {o.detail["method"] for o in ops} == {"rules"} and {o.actor_user_id for o in ops} == {alice.pk}
    for session in CaptureSession.objects.filter(backfill_run=run):
        assert (session.summary, session.summary_method) == made[session.pk] and session.summary_turns > 0

    with CaptureQueriesContext(connection) as queries:  # control: every summary is current, nothing to write
        assert capture_sessions_summarise(session_ids=list(made)) == {}
    assert OpLog.objects.filter(op="capture.session", target_id__in=made, pk__gt=mark).count() == len(made)
    assert not [q for q in queries if q["sql"].startswith(("UPDATE", "INSERT"))]
