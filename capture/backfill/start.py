"""Starting a backfill: read the transcripts (paths the server can read, or uploaded `(name, bytes)` pairs), the
zero-cost estimate with the palace each session goes to, storing the kept turns of a run, and pause and resume.

The palace a session goes to is decided as live capture decides it (capture.services.capture_route): the project
palace of the session's origin when the user is an editor or owner there, else the personal palace, with the reason.
The origin comes from the importers' rules (capture.importers.resolve_project: the git origin of the cwd where the
import runs, else a mapping, else none). Storing goes through capture.services.capture_ingest_many (all sessions of
the import in one call), so a backfilled turn is cleaned, scrubbed of echoes and redacted exactly like a captured
one, and stored once per (user, session, turn): importing the same file twice stores nothing the second time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from accounts.caller import Caller
from capture.importers import BackfillRules, Estimate, Session, TranscriptError, estimate, parse_path, parse_upload
from capture.models import BackfillRun, CaptureSession, CaptureTurn
from capture.services import Routing, SessionIn, TurnIn, capture_ingest_many, capture_route
from palace.actors import Actor
from palace.errors import InvalidInput, NotFound
from palace.oplog import oplog_write

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

LIVE_ALREADY = "captured live already"  # a session the capture endpoint stores: a backfill leaves it to the replay
ALREADY_IMPORTED = "already imported"  # turns an earlier run stored (counted, never stored twice)
ACTIVE = (BackfillRun.State.QUEUED, BackfillRun.State.RUNNING)


# --- reading transcripts -----------------------------------------------------------------------------------------


@dataclass
class Transcripts:
    """The sessions read from files or uploads, the names read, and the files passed over with the reason."""

    sessions: list[Session] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)
    uploaded: bool = False  # uploads: their folders mean nothing on this machine, so git is not read for them


def backfill_read_uploads(*, uploads: Iterable[tuple[str, bytes]]) -> Transcripts:
    """The sessions in uploaded transcripts (.jsonl, .json, or .zip / .tar.gz archives of them), given as
    `(name, bytes)` pairs. A file that is not a transcript raises InvalidInput naming it (field "files")."""
    read = Transcripts(uploaded=True)
    for name, data in uploads:
        try:
            read.sessions += parse_upload(name, data, rejected=read.rejected)
        except TranscriptError as exc:
            raise InvalidInput(str(exc), field="files") from None
        read.files.append(name)
    if not read.files:
        raise InvalidInput("send at least one transcript file", field="files")
    return read


def backfill_read_paths(*, paths: Sequence[str | Path]) -> Transcripts:
    """The sessions in transcript files or directories this server can read (the CLI). A path that does not exist
    or cannot be read raises InvalidInput naming it (field "paths")."""
    read = Transcripts()
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise InvalidInput(f"{raw}: no such file or directory", field="paths")
        try:
            read.sessions += parse_path(path, rejected=read.rejected)
        except TranscriptError as exc:
            raise InvalidInput(str(exc), field="paths") from None
        except OSError as exc:
            raise InvalidInput(f"{raw}: cannot be read ({exc.strerror or exc})", field="paths") from None
        read.files.append(str(raw))
    if not read.files:
        raise InvalidInput("name at least one transcript file or directory", field="paths")
    return read


# --- the estimate ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionPlan:
    """One session of the estimate: the importers' view (turns kept, skip reason, how the origin was chosen) and
    the palace it goes to, chosen as capture chooses (project | personal) and why."""

    entry: Any  # capture.importers.SessionEstimate
    routing: Routing

    @property
    def why(self) -> str:
        return f"{self.entry.note}; {self.routing.why}" if self.entry.origin else self.entry.note

    def as_dict(self) -> dict[str, Any]:
        s = self.entry.session
        return {
            "session": s.session_id,
            "client": s.client,
            "file": s.source_name,
            "cwd": s.cwd,
            "started_at": s.started_at.isoformat() if s.started_at else None,
            "ended_at": s.ended_at.isoformat() if s.ended_at else None,
            "work_turns": self.entry.work_turns,
            "turns": len(self.entry.kept),
            "cut": self.entry.cut,
            "skip_reason": self.entry.skip_reason,
            "origin": self.entry.origin,
            "origin_from": self.entry.how,  # git | map | personal
            "palace": {"id": self.routing.palace.pk, "name": self.routing.palace.label, "chosen": self.routing.chosen},
            "why": self.why,
        }


@dataclass
class BackfillEstimate:
    """What a run with these rules would do; no model was asked and nothing was embedded (`method` says so)."""

    rules: BackfillRules
    plans: list[SessionPlan]
    importers: Estimate
    rejected: list[tuple[str, str]] = field(default_factory=list)
    method: str = "zero-cost estimate: transcripts parsed and rules applied; no model calls, no embedding"

    @property
    def kept(self) -> list[SessionPlan]:
        return [p for p in self.plans if p.entry.skip_reason is None and p.entry.kept]

    def as_dict(self) -> dict[str, Any]:
        palaces: Counter[str] = Counter()
        for plan in self.kept:
            palaces[plan.routing.palace.label] += len(plan.entry.kept)
        return {
            "method": self.method,
            "sessions": len(self.plans),
            "sessions_kept": len(self.kept),
            "sessions_skipped": self.importers.sessions_skipped,
            "turns": self.importers.turns_kept,
            "turns_left_out": self.importers.turns_left_out,
            "skip_reasons": dict(self.importers.skip_reasons),
            "turns_by_palace": dict(palaces),
            "files_rejected": [{"file": name, "reason": why} for name, why in self.rejected],
            "rules": rules_as_dict(self.rules),
            "per_session": [p.as_dict() for p in self.plans],
        }


def rules_as_dict(rules: BackfillRules) -> dict[str, Any]:
    return {
        "window_days": rules.window_days,
        "turns_per_session": rules.turns_per_session,
        "max_turns": rules.max_turns,
        "include_sidechains": rules.include_sidechains,
        "include_no_cwd": rules.include_no_cwd,
        "mappings": dict(rules.mappings),
    }


def backfill_estimate(
    *,
    user: AbstractBaseUser,
    sessions: Sequence[Session],
    rules: BackfillRules,
    use_git: bool = True,
    rejected: Sequence[tuple[str, str]] = (),
    now: datetime | None = None,
) -> BackfillEstimate:
    """The zero-cost estimate (capture.importers.estimate) and, for each session, the palace it would go to.
    `use_git=False` for uploads (Transcripts.uploaded): their folders are another machine's."""
    now = now or timezone.now()
    found = estimate(list(sessions), rules, now=now, use_git=use_git)
    caller = Caller(user=user)
    routes: dict[str | None, Routing] = {}
    plans = []
    for entry in found.sessions:
        if entry.origin not in routes:
            routes[entry.origin] = capture_route(caller=caller, origin=entry.origin)
        plans.append(SessionPlan(entry=entry, routing=routes[entry.origin]))
    return BackfillEstimate(rules=rules, plans=plans, importers=found, rejected=list(rejected))


# --- starting, pausing, resuming ---------------------------------------------------------------------------------


def backfill_start(
    *,
    user: AbstractBaseUser,
    sessions: Sequence[Session],
    rules: BackfillRules,
    files: Sequence[str],
    use_git: bool = True,
    rejected: Sequence[tuple[str, str]] = (),
    now: datetime | None = None,
) -> BackfillRun:
    """Store the kept turns of the estimate's sessions (source "backfill", linked to a new run, state pending); the
    door then queues the run (capture.tasks.enqueue_backfill_run: tasks sit above the services). A session the
    capture endpoint already stores is left to it (skip reason "captured live already"); turns an earlier import
    stored are counted, not stored again."""
    now = now or timezone.now()
    plan = backfill_estimate(user=user, sessions=sessions, rules=rules, use_git=use_git, rejected=rejected, now=now)
    caller = Caller(user=user)
    skipped: Counter[str] = Counter(plan.importers.skip_reasons)
    with transaction.atomic():
        run = BackfillRun.objects.create(
            user_id=user.pk,
            state=BackfillRun.State.QUEUED,
            rules=rules_as_dict(rules),
            estimate={k: v for k, v in plan.as_dict().items() if k != "per_session"},
            files=[str(f)[:300] for f in files][:1000],
        )
        duplicates, reasons = _store_sessions(caller=caller, run=run, plans=plan.kept)
        skipped.update(reasons)
        total = CaptureTurn.objects.filter(session__backfill_run=run, state=CaptureTurn.State.PENDING).count()
        run.counts = {
            "turns_total": total,
            "turns_done": 0,
            "memories": 0,
            "episodes": 0,
            "facts": 0,
            "sessions": CaptureSession.objects.filter(backfill_run=run).count(),
            "sessions_skipped": dict(skipped),  # whole sessions left out, by reason
            "skipped": {ALREADY_IMPORTED: duplicates} if duplicates else {},  # turns left out, by reason
            "rate": None,
            "eta_seconds": None,
        }
        run.save(update_fields=["counts"])
    return run


def _store_sessions(*, caller: Caller, run: BackfillRun, plans: Sequence[SessionPlan]) -> tuple[int, Counter[str]]:
    """Store the kept turns of every session through capture_ingest_many (one call for the import: the turns of all
    sessions in one insert); (turns left out as duplicates, sessions skipped by reason)."""
    keys = [p.entry.session.session_id for p in plans]
    rows = CaptureSession.objects.filter(user_id=caller.user.pk, key__in=keys).only("key", "source")
    existing = {row.key: row for row in rows}
    skipped: Counter[str] = Counter()
    store: dict[str, tuple[SessionPlan, SessionIn]] = {}  # one per session key (two files of one session: pooled)
    for p in plans:
        session, keep = p.entry.session, set(p.entry.kept)
        found = existing.get(session.session_id)
        if found is not None and found.source == CaptureSession.Source.CAPTURE:
            skipped[LIVE_ALREADY] += 1
            continue
        turns = [
            TurnIn(index=t.index, role=t.role, text=t.text, tool=t.tool, at=t.at)
            for t in session.turns
            if t.index in keep
        ]
        if session.session_id in store:
            first, pooled = store[session.session_id]
            store[session.session_id] = (first, replace(pooled, turns=[*pooled.turns, *turns]))
            continue
        store[session.session_id] = (
            p,
            SessionIn(
                key=session.session_id, turns=turns, client=session.client, origin=p.entry.origin, cwd=session.cwd or ""
            ),
        )
    sessions = [s for _, s in store.values()]
    results = capture_ingest_many(caller=caller, sessions=sessions) if sessions else []
    mine = []
    for (p, _), result in zip(store.values(), results, strict=True):
        if existing.get(p.entry.session.session_id) is None or result.stored:
            # New turns belong to this run (an earlier run keeps the sessions it finished, for its history).
            row = result.session
            if row is None:
                continue
            row.source, row.backfill_run = CaptureSession.Source.BACKFILL, run
            row.routed_by, row.routing_reason = p.routing.chosen, p.why[:300]
            mine.append(row)
    CaptureSession.objects.bulk_update(mine, ["source", "backfill_run", "routed_by", "routing_reason"])
    return sum(r.duplicates for r in results), skipped


def backfill_run_get(*, user: AbstractBaseUser, run_id: int) -> BackfillRun:
    """The user's run; another user's run answers exactly like a missing one."""
    run = BackfillRun.objects.filter(pk=run_id, user_id=user.pk).first()
    if run is None:
        raise NotFound("backfill run not found")
    return run


def backfill_runs(*, user: AbstractBaseUser, limit: int = 50) -> list[BackfillRun]:
    """The user's runs, newest first."""
    return list(BackfillRun.objects.filter(user_id=user.pk).order_by("-created_at", "-pk")[:limit])


def backfill_pause(*, user: AbstractBaseUser, run_id: int) -> BackfillRun:
    """Ask the run to pause: the job stops between batches (a batch in flight finishes and is kept)."""
    with transaction.atomic():
        run = backfill_run_get(user=user, run_id=run_id)
        run = BackfillRun.objects.select_for_update().get(pk=run.pk)
        if run.state not in ACTIVE:
            raise InvalidInput(f"only a queued or running run can pause; this one is {run.state}", field="run")
        run.pause_requested = True
        run.save(update_fields=["pause_requested"])
        _op(run=run, phase="pause requested")
    return run


def backfill_resume(*, user: AbstractBaseUser, run_id: int) -> BackfillRun:
    """Resume a paused (or failed) run where it stopped: state queued, the pending turns continue once the door
    queues it again (capture.tasks.enqueue_backfill_run)."""
    with transaction.atomic():
        run = backfill_run_get(user=user, run_id=run_id)
        run = BackfillRun.objects.select_for_update().get(pk=run.pk)
        if run.state not in (BackfillRun.State.PAUSED, BackfillRun.State.FAILED):
            raise InvalidInput(f"only a paused or failed run can resume; this one is {run.state}", field="run")
        run.state, run.pause_requested, run.error = BackfillRun.State.QUEUED, False, ""
        run.save(update_fields=["state", "pause_requested", "error"])
        _op(run=run, phase="resumed")
    return run


def _op(*, run: BackfillRun, phase: str, detail: dict[str, Any] | None = None) -> None:
    oplog_write(
        op="backfill.run",
        actor=Actor.for_user(run.user),
        target_kind="backfill_run",
        target_id=run.pk,
        reason=phase,
        detail={"phase": phase, "state": run.state, **(detail or {})},
    )
