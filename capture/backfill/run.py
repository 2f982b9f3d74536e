"""Running a backfill (the Celery task in capture/tasks.py is its door): the run's pending turns, in batches.

One batch, ATRIUM_BACKFILL_BATCH_TURNS turns in (session, index) order:

1. each turn is extracted (capture.extraction.extract_turn: the model when one is configured, else the rules,
   labelled); a tool turn, an assistant turn in light mode and an empty one keep nothing and are skipped with the
   reason;
2. the episodes and facts go to memory.save.memory_save_bulk, one call per palace with the whole batch as one
   embedder chunk (source "backfill", review enrolment off: backfilled memories never enter today's review queue);
   every pipeline step applies (redaction, disposition against neighbours, slots, entities, op rows);
3. in the same transaction as those memories: the turns marked done (or skipped) with their memory ids, a
   capture.turn op row each, and the run's progress counts. A worker killed mid-batch rolls all of it back, so the
   restarted run saves the batch's turns again from scratch, and no turn is stored twice.

Look-ahead: while a batch is written, the next one is already planned and prepared, and its embedding runs on a
second thread (the embedder needs no database and releases the GIL), so the run is bound by the embedder, not by
the sum of embedding and writing. The next batch's first item of a session that continues is embedded with the last
item this batch keeps as its context; memory_chunk_save checks that it became the session's latest memory and
derives the item's texts again when it did not (a merge, a failed batch), so every text and vector is the one a
sequential run gives.

Between batches the run reads `pause_requested` (→ paused; a batch made ready ahead is dropped, its turns stay
pending). A session whose turns are all done gets its one-sentence
summary (capture.processing, which labels it "llm" or "rules"). One worker runs a run at a time: a PostgreSQL
advisory lock on the run id, held at the connection's session level, dies with a killed worker's connection, so
`backfill_requeue_stale` (at worker start) can tell a run left "running" by a dead worker from a live one.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from capture.backfill.progress import backfill_progress_publish
from capture.extraction import extract_turn
from capture.models import BackfillRun, CaptureSession, CaptureTurn
from capture.processing import FACT_CONFIDENCE, MAX_ATTEMPTS, capture_sessions_summarise
from memory.save import (
    Chunk,
    ItemError,
    SaveItem,
    SaveResult,
    memory_chunk_embed,
    memory_chunk_prepare,
    memory_chunk_save,
)
from memory.text import truncate_to_chars
from palace.actors import Actor
from palace.locks import advisory_lock
from palace.models import Palace
from palace.oplog import OpEntry, oplog_write, oplog_write_many

log = logging.getLogger(__name__)

LOCK_CLASS = 0x4246494C  # "BFIL": the advisory lock's first key; the run id is the second
PENDING, DONE, SKIPPED, FAILED = (s.value for s in CaptureTurn.State)
State = BackfillRun.State


@dataclass
class RunResult:
    run_id: int
    busy: bool = False  # another worker holds the run
    state: str = ""
    batches: int = 0
    turns: int = 0  # turns finished by this call


def backfill_run_process(*, run_id: int, batch_turns: int | None = None) -> RunResult:
    """Run (or continue) a queued or running run until its turns are done or a pause is asked (module docstring).
    `batch_turns`: turns per batch (default ATRIUM_BACKFILL_BATCH_TURNS)."""
    batch_turns = batch_turns or settings.ATRIUM_BACKFILL_BATCH_TURNS
    result = RunResult(run_id=run_id)
    with advisory_lock(lock_class=LOCK_CLASS, object_id=run_id) as got:
        if not got:
            result.busy = True
            return result
        run = BackfillRun.objects.select_related("user").filter(pk=run_id).first()
        if run is None or run.state not in (State.QUEUED, State.RUNNING):
            result.state = run.state if run is not None else "missing"
            return result
        _begin(run)
        actor, tried, summarised = Actor.for_user(run.user), set[int](), set[int]()
        began, done_here = time.monotonic(), 0
        # One thread embeds the next batch while this one is written (module docstring, "Look-ahead").
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="backfill-embed")
        try:
            ahead = _next_batch(run=run, tried=tried, batch_turns=batch_turns, pool=pool, context={})
            while ahead is not None:
                if BackfillRun.objects.filter(pk=run.pk, pause_requested=True).exists():
                    _stop(run, State.PAUSED, phase="paused")  # the batch made ready is dropped: its turns stay pending
                    result.state = run.state
                    return result
                current = ahead
                ahead = _next_batch(run=run, tried=tried, batch_turns=batch_turns, pool=pool, context=current.context)
                done_here += _write(run=run, actor=actor, ready=current, began=began, done_before=done_here)
                result.batches += 1
                summarised |= _summarise_finished(run=run, sessions={t.session_id for t in current.turns})
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        result.turns = done_here
        # A run restarted after a crash may have missed some: the others, not the ones summarised just now again.
        _summarise_finished(run=run, sessions=None, besides=summarised)
        left = CaptureTurn.objects.filter(session__backfill_run=run, state=PENDING).count()
        if left:
            run.error = f"{left} turns could not be saved (resume to try again)"
            _stop(run, State.FAILED, phase="failed")
        else:
            _stop(run, State.DONE, phase="finished")
        result.state = run.state
    return result


def _begin(run: BackfillRun) -> None:
    with transaction.atomic():
        restarted = run.state == State.RUNNING  # left running by a worker that died
        run.state = State.RUNNING
        run.started_at = run.started_at or timezone.now()
        run.save(update_fields=["state", "started_at"])
        _op(run, "restarted after a worker stopped" if restarted else "started")


def _stop(run: BackfillRun, state: str, *, phase: str) -> None:
    with transaction.atomic():
        run.refresh_from_db(fields=["counts"])
        run.state, run.pause_requested = state, False
        if state in (State.DONE, State.FAILED):
            run.finished_at = timezone.now()
            run.counts = {**run.counts, "eta_seconds": 0 if state == State.DONE else None}
        run.save(update_fields=["state", "pause_requested", "finished_at", "error", "counts"])
        _op(run, phase)


def _op(run: BackfillRun, phase: str) -> None:
    backfill_progress_publish(run=run)  # the Backfill view's live bar (after this transaction commits)
    counts = run.counts or {}
    oplog_write(
        op="backfill.run",
        actor=Actor.for_user(run.user),
        target_kind="backfill_run",
        target_id=run.pk,
        reason=phase,
        detail={
            "phase": phase,
            "state": run.state,
            "turns_total": counts.get("turns_total"),
            "turns_done": counts.get("turns_done"),
            "memories": counts.get("memories"),
            "skipped": counts.get("skipped", {}),
            "error": run.error,
        },
    )


@dataclass
class _Planned:
    turn: CaptureTurn
    state: str
    method: str = ""
    reason: str = ""
    echoes: list[str] = field(default_factory=list)
    first: int = 0  # its items' range in its palace's bulk save
    count: int = 0
    memory_ids: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # of the memories saved or reinforced
    dispositions: list[str] = field(default_factory=list)


def _plan(turn: CaptureTurn) -> tuple[_Planned, list[SaveItem]]:
    """What one turn keeps (step 1): its save requests, or a skip with the reason."""
    session = turn.session
    if turn.role == CaptureTurn.Role.TOOL or not turn.text.strip():
        why = "tool output is never captured" if turn.role == CaptureTurn.Role.TOOL else "empty turn"
        return _Planned(turn, SKIPPED, "rules", why), []
    extraction = extract_turn(text=turn.text, role=turn.role, mode=session.mode)
    planned = _Planned(turn, DONE, extraction.method, extraction.fallback_reason, list(extraction.echoes))
    common: dict[str, Any] = {
        "occurred_at": turn.at,
        "source_session": session.key,
        "source_turn": str(turn.index),
        "speaker": turn.role,
        "enrol_review": False,  # history: never today's review queue
    }
    limit = settings.ATRIUM_MAX_CONTENT_CHARS
    items = []
    if extraction.episode.strip():
        items.append(SaveItem(content=truncate_to_chars(extraction.episode, limit), kind="episode", **common))
    for fact in extraction.facts:
        if fact.content.strip():
            confidence = min(float(fact.confidence), FACT_CONFIDENCE)
            content = truncate_to_chars(fact.content, limit)
            items.append(SaveItem(content=content, kind=fact.kind, confidence=confidence, **common))
    if not items:
        planned.state, planned.reason = SKIPPED, extraction.fallback_reason or "nothing to keep"
    return planned, items


@dataclass
class _Ready:
    """A batch made ready to write: its turns planned, a chunk per palace prepared, their embedding under way."""

    turns: list[CaptureTurn]
    planned: list[_Planned]
    chunks: list[tuple[Palace, Chunk, list[_Planned]]]
    embedding: Future[Any] | None
    context: dict[str, str]  # each session's last kept item: the context of its first item in the next batch


def _next_batch(
    *, run: BackfillRun, tried: set[int], batch_turns: int, pool: ThreadPoolExecutor, context: dict[str, str]
) -> _Ready | None:
    """The next pending turns (not tried by this call yet), made ready (`_ready`); None when there are none."""
    turns = list(
        CaptureTurn.objects.filter(session__backfill_run=run, state=PENDING)
        .exclude(pk__in=tried)
        .select_related("session__palace")
        .order_by("session_id", "index")[:batch_turns]
    )
    if not turns:
        return None
    tried.update(t.pk for t in turns)
    return _ready(run=run, turns=turns, pool=pool, context=context)


def _ready(*, run: BackfillRun, turns: list[CaptureTurn], pool: ThreadPoolExecutor, context: dict[str, str]) -> _Ready:
    """Steps 1 and the first half of 2 for one batch: plan each turn, prepare its palace's chunk, and start embedding
    on `pool`. `context`: the previous batch's last kept item per session, which its writes are about to make the
    session's latest memory (memory_chunk_save checks that before writing, and embeds again where it is not)."""
    planned: list[_Planned] = []
    by_palace: dict[int, tuple[Palace, list[SaveItem], list[_Planned]]] = {}
    for turn in turns:
        try:
            one, items = _plan(turn)
        except Exception as exc:  # a broken extractor loses no turn: it is retried, then marked failed
            log.exception("backfill run %s: extracting turn %s failed", run.pk, turn.pk)
            _fail([turn], f"extraction: {exc}")
            continue
        planned.append(one)
        if items:
            palace, queue, owners = by_palace.setdefault(turn.session.palace_id, (turn.session.palace, [], []))
            one.first, one.count = len(queue), len(items)
            queue += items
            owners.append(one)
    ready = _Ready(turns=turns, planned=planned, chunks=[], embedding=None, context={})
    now = timezone.now()
    for palace, items, owners in by_palace.values():
        chunk = memory_chunk_prepare(palace=palace, items=items, now=now, context=context)
        ready.chunks.append((palace, chunk, owners))
        ready.context.update((p.source_session, p.content) for _, p in chunk.prepared if p.source_session)
    if ready.chunks:
        ready.embedding = pool.submit(lambda: [memory_chunk_embed(c) for _, c, _ in ready.chunks])
    return ready


def _write(*, run: BackfillRun, actor: Actor, ready: _Ready, began: float, done_before: int) -> int:
    """The second half of step 2, and step 3, for one batch; the number of turns it finished (0 when the batch failed
    and was rolled back)."""
    planned = ready.planned
    if not planned:
        return 0
    now = timezone.now()
    try:
        if ready.embedding is not None:
            ready.embedding.result()
        with transaction.atomic():
            for palace, chunk, owners in ready.chunks:
                _outcomes(owners, memory_chunk_save(palace=palace, actor=actor, chunk=chunk, source="backfill"))
            _finish(run=run, actor=actor, planned=planned, now=now, began=began, done_before=done_before)
    except Exception as exc:  # the batch rolled back whole: its turns are retried (by this run, then a resume)
        log.exception("backfill run %s: a batch failed", run.pk)
        _fail([p.turn for p in planned], f"save: {exc}")
        return 0
    return len(planned)


def _outcomes(owners: Sequence[_Planned], saved: Sequence[SaveResult | ItemError]) -> None:
    for one in owners:
        outcomes = saved[one.first : one.first + one.count]
        broken = [o for o in outcomes if isinstance(o, ItemError) and o.code != "invalid"]
        if broken:  # roll the batch back: a half-saved turn would be saved again on the retry
            raise RuntimeError(f"turn {one.turn.index} of session {one.turn.session.key}: {broken[0].message}")
        kept = [o.memory for o in outcomes if isinstance(o, SaveResult) and o.memory is not None]
        one.memory_ids, one.kinds = [m.pk for m in kept], [m.kind for m in kept]
        one.dispositions = [o.disposition if isinstance(o, SaveResult) else "invalid" for o in outcomes]


def _finish(
    *, run: BackfillRun, actor: Actor, planned: Sequence[_Planned], now: datetime, began: float, done_before: int
) -> None:
    """Step 3, inside the batch's transaction: the turns' state and memory ids, their op rows, the run's counts."""
    for one in planned:
        turn = one.turn
        turn.state, turn.method, turn.fallback_reason = one.state, one.method, one.reason[:200]
        turn.memory_ids, turn.processed_at, turn.error = one.memory_ids, now, ""
        turn.attempts += 1
    _mark(planned, now=now)
    oplog_write_many(  # one insert for the batch's turns
        op="capture.turn",
        actor=actor,
        entries=[
            OpEntry(
                palace=one.turn.session.palace,
                target_kind="capture_turn",
                target_id=one.turn.pk,
                detail={
                    "session": one.turn.session.key,
                    "turn": one.turn.index,
                    "role": one.turn.role,
                    "state": one.state,
                    "method": one.method,
                    "fallback": one.reason,
                    "memories": one.memory_ids,
                    "dispositions": one.dispositions,
                    "echoes": one.echoes,
                    "source": "backfill",
                    "run": run.pk,
                },
            )
            for one in planned
        ],
    )
    run.refresh_from_db(fields=["counts"])
    counts = dict(run.counts)
    skipped = Counter(counts.get("skipped") or {})
    skipped.update(p.reason or "nothing to keep" for p in planned if p.state == SKIPPED)
    kinds = Counter("episodes" if kind == "episode" else "facts" for p in planned for kind in p.kinds)
    total = int(counts.get("turns_total") or 0)
    done = int(counts.get("turns_done") or 0) + len(planned)
    elapsed = max(time.monotonic() - began, 1e-6)
    rate = (done_before + len(planned)) / elapsed
    counts.update(
        turns_done=done,
        memories=int(counts.get("memories") or 0) + sum(len(p.memory_ids) for p in planned),
        episodes=int(counts.get("episodes") or 0) + kinds["episodes"],
        facts=int(counts.get("facts") or 0) + kinds["facts"],
        skipped=dict(skipped),
        rate=round(rate, 3),
        eta_seconds=round(max(total - done, 0) / rate, 1),
    )
    run.counts = counts
    BackfillRun.objects.filter(pk=run.pk).update(counts=counts)  # never the pause flag another request sets
    backfill_progress_publish(run=run)


# The batch's turns in one statement: bulk_update's CASE per field and row cost more Python than the save itself.
_MARK_SQL = """
UPDATE capture_captureturn AS t
SET state = v.state, method = v.method, fallback_reason = v.reason, memory_ids = v.ids::jsonb,
    attempts = v.attempts, processed_at = %s, error = ''
FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::int[])
     AS v(id, state, method, reason, ids, attempts)
WHERE t.id = v.id
"""


def _mark(planned: Sequence[_Planned], *, now: datetime) -> None:
    turns = [p.turn for p in planned]
    with connection.cursor() as cursor:
        cursor.execute(
            _MARK_SQL,
            [
                now,
                [t.pk for t in turns],
                [t.state for t in turns],
                [t.method for t in turns],
                [t.fallback_reason for t in turns],
                [json.dumps(t.memory_ids) for t in turns],
                [t.attempts for t in turns],
            ],
        )


def _fail(turns: Sequence[CaptureTurn], error: str) -> None:
    """A failed attempt: the turn stays pending for the next attempt, failed after MAX_ATTEMPTS."""
    for turn in turns:
        turn.refresh_from_db(fields=["attempts"])
        turn.attempts += 1
        turn.error = error[:500]
        turn.state = FAILED if turn.attempts >= MAX_ATTEMPTS else PENDING
        turn.save(update_fields=["attempts", "error", "state"])


def _summarise_finished(
    *, run: BackfillRun, sessions: set[int] | None, besides: AbstractSet[int] = frozenset()
) -> set[int]:
    """The summary of each session (of `sessions`, or all of the run's but `besides`) that has no pending turn left
    and whose summary does not cover its done user turns yet (capture.processing writes them, labelled, with an op
    row each); the ids of the sessions it looked at."""
    rows = CaptureSession.objects.filter(backfill_run=run)
    if sessions is not None:
        rows = rows.filter(pk__in=sessions)
    finished = set(rows.exclude(turns__state=PENDING).values_list("pk", flat=True).distinct()) - besides
    if finished:  # all at once: the run's advisory lock keeps every other writer off its sessions
        capture_sessions_summarise(session_ids=sorted(finished))
    return finished


def backfill_requeue_stale() -> list[int]:
    """The runs a dead worker left running (or queued): their advisory lock is free. The caller queues them."""
    stale = []
    for run_id in BackfillRun.objects.filter(state__in=[State.RUNNING, State.QUEUED]).values_list("pk", flat=True):
        with advisory_lock(lock_class=LOCK_CLASS, object_id=run_id) as free:
            if free:
                stale.append(run_id)
    return stale
