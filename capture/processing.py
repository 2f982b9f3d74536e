"""The worker's side of capture: extract the pending turns of a session and save what they keep through memory's
write pipeline, then summarise the session (capture/tasks.py is the Celery door; the replay task calls it too).

For each pending turn, in order:

1. a tool turn, an assistant turn in light mode, and a turn with no text are skipped (state skipped, with the
   reason): tool output is never stored;
2. the others go to capture.extraction.extract_turn: the episode (the turn, condensed) and candidate facts, by the
   model when one is configured, by the rules otherwise (the method and any fallback reason are kept on the turn);
3. the episode (kind episode, source session and turn, the turn's time) and the facts (low confidence) are saved with
   memory.save.memory_save_bulk, so redaction, disposition against what is known (a restatement MERGEs: it
   reinforces), slots, entities and op rows all apply; a backfilled session saves with source "backfill" and never
   enrols in review;
4. the turn is marked done with its memory ids, and a capture.turn op row is written.

A failure (the model raising, the database) leaves the turn pending with attempts + 1 and the error: the next capture
call of the session or the beat's replay tries again, up to MAX_ATTEMPTS, then the turn is failed. One session is
processed by one worker at a time (a PostgreSQL advisory lock on its id); another asked meanwhile says it is busy.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, QuerySet
from django.utils import timezone

from capture.extraction import extract_turn, summarize_session
from capture.models import CaptureSession, CaptureTurn
from memory.save import ItemError, SaveItem, SaveResult, memory_save_bulk
from memory.text import truncate_to_chars
from palace.actors import Actor
from palace.locks import advisory_lock
from palace.oplog import OpEntry, oplog_write, oplog_write_many

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
FACT_CONFIDENCE = 0.4  # extracted, not stated: below the 0.7 of a deliberate save, raised by each restatement
TURNS_PER_SAVE = 8  # the turns whose memories go to one bulk save (one embedder call per 10 items)
LOCK_CLASS = 0x43415054  # "CAPT": the advisory lock's first key; the session id is the second
PENDING, DONE, SKIPPED, FAILED = (s.value for s in CaptureTurn.State)


@dataclass
class ProcessResult:
    session_id: int
    busy: bool = False  # another worker holds the session
    done: int = 0
    skipped: int = 0
    retry: int = 0  # turns a failed attempt left pending
    failed: int = 0  # turns given up on
    memory_ids: list[int] = field(default_factory=list)
    summary: str = ""


def _actor(session: CaptureSession) -> Actor:
    """The person (and token) who sent the turns: the memories carry them as a direct save would."""
    if session.token_id is not None:
        return Actor.for_token(session.user, session.token_id, session.token_label)
    return Actor.for_user(session.user)


def capture_session_process(*, session_id: int, now: datetime | None = None) -> ProcessResult:
    """Extract and save the session's pending turns in order, then summarise it (the module docstring)."""
    now = now or timezone.now()
    result = ProcessResult(session_id=session_id)
    with advisory_lock(lock_class=LOCK_CLASS, object_id=session_id) as got:
        if not got:
            result.busy = True
            return result
        session = CaptureSession.objects.select_related("user", "palace").filter(pk=session_id).first()
        if session is None:
            return result
        actor, tried = _actor(session), set[int]()
        while True:
            batch = list(
                CaptureTurn.objects.filter(session=session, state=PENDING)
                .exclude(pk__in=tried)
                .order_by("index")[:TURNS_PER_SAVE]
            )
            if not batch:
                break
            tried.update(t.pk for t in batch)
            _process_batch(session=session, actor=actor, turns=batch, now=now, result=result)
        # the session's one-sentence summary, (re)made when a user turn was done since the last one
        result.summary = capture_sessions_summarise(session_ids=[session.pk]).get(session.pk, "")
    return result


def _skip_reason(session: CaptureSession, turn: CaptureTurn) -> str:
    if turn.role == CaptureTurn.Role.TOOL:
        return "tool turn: tool calls and results are never stored"
    if turn.role == CaptureTurn.Role.ASSISTANT and session.mode != CaptureSession.Mode.EAGER:
        return f"assistant turn in {session.mode} mode (eager keeps them)"
    if not turn.text.strip():
        return "no text"
    return ""


@dataclass
class _Kept:
    turn: CaptureTurn
    method: str
    fallback: str
    echoes: list[str]
    first: int  # its items' range in the bulk save
    count: int


def _process_batch(
    *, session: CaptureSession, actor: Actor, turns: Sequence[CaptureTurn], now: datetime, result: ProcessResult
) -> None:
    items: list[SaveItem] = []
    kept: list[_Kept] = []
    for turn in turns:
        reason = _skip_reason(session, turn)
        if reason:
            _finish(session=session, actor=actor, turn=turn, state=SKIPPED, now=now, fallback=reason)
            result.skipped += 1
            continue
        try:
            extraction = extract_turn(text=turn.text, role=turn.role, mode=session.mode)
            mine = _items(session=session, turn=turn, episode=extraction.episode, facts=extraction.facts)
        except Exception as exc:  # a broken extractor must not lose the turn: it stays pending for the replay
            log.exception("capture: extracting turn %s of session %s failed", turn.index, session.pk)
            _fail(turn=turn, error=f"extraction: {exc}", result=result)
            continue
        if not mine:
            _finish(
                session=session,
                actor=actor,
                turn=turn,
                state=SKIPPED,
                now=now,
                method=extraction.method,
                fallback=extraction.fallback_reason or "nothing to keep",
            )
            result.skipped += 1
            continue
        kept.append(
            _Kept(turn, extraction.method, extraction.fallback_reason, list(extraction.echoes), len(items), len(mine))
        )
        items += mine
    if not kept:
        return
    source = "backfill" if session.source == CaptureSession.Source.BACKFILL else "capture"
    try:
        saved = memory_save_bulk(palace=session.palace, actor=actor, items=items, source=source, now=now).items
    except Exception as exc:
        log.exception("capture: saving turns of session %s failed", session.pk)
        for k in kept:
            _fail(turn=k.turn, error=f"save: {exc}", result=result)
        return
    for k in kept:
        outcomes = saved[k.first : k.first + k.count]
        broken = [o for o in outcomes if isinstance(o, ItemError) and o.code != "invalid"]
        if broken:
            _fail(turn=k.turn, error=f"save: {broken[0].message}", result=result)
            continue
        ids = [o.memory.pk for o in outcomes if isinstance(o, SaveResult) and o.memory is not None]
        dispositions = [o.disposition if isinstance(o, SaveResult) else "invalid" for o in outcomes]
        _finish(
            session=session,
            actor=actor,
            turn=k.turn,
            state=DONE,
            now=now,
            method=k.method,
            fallback=k.fallback,
            memory_ids=ids,
            detail={"dispositions": dispositions, "echoes": k.echoes},
        )
        result.done += 1
        result.memory_ids += ids


def _items(*, session: CaptureSession, turn: CaptureTurn, episode: str, facts: Sequence[Any]) -> list[SaveItem]:
    """The episode and the facts of one turn, as save requests: provenance (session, turn, time), low confidence
    for the facts, no review enrolment for a backfill."""
    limit = settings.ATRIUM_MAX_CONTENT_CHARS
    common: dict[str, Any] = {
        "occurred_at": turn.at,
        "source_session": session.key,
        "source_turn": str(turn.index),
        "speaker": turn.role,
        "enrol_review": False if session.source == CaptureSession.Source.BACKFILL else None,
    }
    items = []
    if episode.strip():
        items.append(SaveItem(content=truncate_to_chars(episode, limit), kind="episode", **common))
    for fact in facts:
        if fact.content.strip():
            confidence = min(float(fact.confidence), FACT_CONFIDENCE)
            items.append(
                SaveItem(
                    content=truncate_to_chars(fact.content, limit), kind=fact.kind, confidence=confidence, **common
                )
            )
    return items


def _finish(
    *,
    session: CaptureSession,
    actor: Actor,
    turn: CaptureTurn,
    state: str,
    now: datetime,
    method: str = "",
    fallback: str = "",
    memory_ids: Sequence[int] = (),
    detail: dict[str, Any] | None = None,
) -> None:
    """Mark the turn done or skipped and write its capture.turn op row, in one transaction."""
    with transaction.atomic():
        turn.state, turn.method, turn.fallback_reason = state, method, fallback[:200]
        turn.memory_ids, turn.processed_at, turn.error = list(memory_ids), now, ""
        turn.attempts += 1
        turn.save(
            update_fields=["state", "method", "fallback_reason", "memory_ids", "processed_at", "error", "attempts"]
        )
        oplog_write(
            op="capture.turn",
            actor=actor,
            palace=session.palace,
            target_kind="capture_turn",
            target_id=turn.pk,
            detail={
                "session": session.key,
                "turn": turn.index,
                "role": turn.role,
                "state": state,
                "method": method,
                "fallback": fallback,
                "memories": list(memory_ids),
                "source": session.source,
                **(detail or {}),
            },
        )


def _fail(*, turn: CaptureTurn, error: str, result: ProcessResult) -> None:
    """A failed attempt: pending again (the replay takes it) until MAX_ATTEMPTS, then failed. No op row: nothing in
    a palace changed."""
    turn.attempts += 1
    turn.error = error[:500]
    turn.state = FAILED if turn.attempts >= MAX_ATTEMPTS else PENDING
    turn.save(update_fields=["attempts", "error", "state"])
    if turn.state == FAILED:
        result.failed += 1
    else:
        result.retry += 1


SUMMARY_TURNS = 200  # the first turns of a session its summary is made from


def capture_sessions_summarise(*, session_ids: Sequence[int]) -> dict[int, str]:
    """The one-sentence summary of each session whose summary does not cover its done user turns yet (model or
    rules, labelled, with a `capture.session` op row), for one session (a capture call, after its turns) or many (a
    backfill's finished sessions) with one query each for the sessions, their done user turns and their turns, one
    update, and one insert of op rows a sender. The caller serialises writers of these sessions (a capture call
    holds the session's advisory lock; a backfill run its run's, and a live capture never touches a backfill's
    sessions: capture_pending_sessions). Returns each summarised session's new summary."""
    sessions = {
        s.pk: s for s in CaptureSession.objects.select_related("user", "palace").filter(pk__in=list(session_ids))
    }
    done = dict(
        CaptureTurn.objects.filter(session_id__in=list(sessions), role=CaptureTurn.Role.USER, state=DONE)
        .values("session_id")
        .annotate(n=Count("id"))
        .values_list("session_id", "n")
    )
    due = sorted(pk for pk, s in sessions.items() if done.get(pk) and not (s.summary and s.summary_turns >= done[pk]))
    if not due:
        return {}
    texts: dict[int, list[tuple[str, str]]] = {pk: [] for pk in due}
    for pk, role, text in _summary_turns(due).values_list("session_id", "role", "text"):
        if len(texts[pk]) < SUMMARY_TURNS:
            texts[pk].append((role, text))
    made = [(sessions[pk], _summary_of(sessions[pk], turns=texts[pk], user_done=done[pk])) for pk in due]
    kept = [(session, entry) for session, entry in made if entry is not None]
    with transaction.atomic():
        CaptureSession.objects.bulk_update([session for session, _ in kept], _SUMMARY_FIELDS)
        for _, run in itertools.groupby(kept, key=lambda pair: (pair[0].user_id, pair[0].token_id)):
            rows = list(run)
            oplog_write_many(op="capture.session", actor=_actor(rows[0][0]), entries=[entry for _, entry in rows])
    return {session.pk: session.summary for session, _ in kept}


_SUMMARY_FIELDS = ["summary", "summary_method", "summary_fallback", "summary_turns"]


def _summary_turns(session_ids: Sequence[int]) -> QuerySet[CaptureTurn]:
    """The turns a summary reads: processed, with text, no tool turns; by session, in order."""
    return (
        CaptureTurn.objects.filter(session_id__in=list(session_ids), state__in=[DONE, SKIPPED])
        .exclude(role=CaptureTurn.Role.TOOL)
        .exclude(text="")
        .order_by("session_id", "index")
    )


def _summary_of(session: CaptureSession, *, turns: list[tuple[str, str]], user_done: int) -> OpEntry | None:
    """Summarise (model or rules, labelled) into `session`'s fields, unsaved; its op row. None when it failed."""
    try:
        summary = summarize_session(turns=turns)
    except Exception:  # the summary is kept for the next pass; the turns are saved already
        log.exception("capture: summarising session %s failed", session.pk)
        return None
    session.summary, session.summary_method = summary.text, summary.method
    session.summary_fallback, session.summary_turns = summary.fallback_reason[:200], user_done
    return OpEntry(
        palace=session.palace,
        target_kind="capture_session",
        target_id=session.pk,
        detail={
            "session": session.key,
            "method": summary.method,
            "fallback": summary.fallback_reason,
            "turns": user_done,
            "source": session.source,
        },
    )


def capture_pending_sessions(*, limit: int = 100) -> list[int]:
    """The sessions with turns still pending (the beat's replay walks them), oldest first; a backfill run's turns
    are its job's (capture/backfill), which honours its pause."""
    rows = (
        CaptureTurn.objects.filter(state=PENDING)
        .exclude(session__source=CaptureSession.Source.BACKFILL)
        .values_list("session_id", flat=True)
        .order_by("session_id")
        .distinct()[:limit]
    )
    return list(rows)
