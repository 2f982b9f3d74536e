"""REST door to backfill (capture.backfill): upload past transcripts, see the zero-cost estimate, start a run on the
worker, follow it, pause and resume it.

`POST /estimate` and `POST /runs` take a multipart upload: one or more `files` (Claude Code or Codex JSONL, OpenAI
messages JSON, or .zip / .tar.gz archives of them) and the rules as form fields. An upload's folders are the
uploader's machine's, so git is never read for them here (`use_git=False`): a session's project comes from a
`mappings` entry (CWD=ORIGIN), else it goes to the personal palace, and the estimate says which for each. A run
belongs to the person who started it: anyone else's run id answers the 404 of a run that does not exist.
"""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpRequest
from ninja import File, Form, Router, Schema, Status
from ninja.files import UploadedFile
from pydantic import ConfigDict, Field

from api.auth import caller_of
from api.schemas import ErrorOut
from capture.backfill import (
    Transcripts,
    backfill_estimate,
    backfill_pause,
    backfill_read_uploads,
    backfill_resume,
    backfill_run_get,
    backfill_run_view,
    backfill_runs,
    backfill_start,
)
from capture.importers import BackfillRules, RulesError
from capture.tasks import enqueue_backfill_run
from palace.errors import InvalidInput

log = logging.getLogger(__name__)
router = Router(tags=["backfill"])
ERRORS: dict[int, Any] = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}
MAX_FILES = 100  # Django's DATA_UPLOAD_MAX_NUMBER_FILES: an archive carries more
MAX_TURNS_CEILING = 5000  # capture.importers' ceiling on turns_per_session and max_turns, stated in the schema


class RulesIn(Schema):
    """The rules, as form fields; each omitted one keeps its default."""

    model_config = ConfigDict(extra="ignore")

    window_days: int = Field(default=7, ge=0, le=3650, description="sessions active in the last N days; 0: all")
    turns_per_session: int = Field(default=20, ge=1, le=MAX_TURNS_CEILING, description="the first N turns of each")
    max_turns: int = Field(default=200, ge=1, le=MAX_TURNS_CEILING, description="turns in the whole run")
    include_sidechains: bool = Field(default=False, description="subagent (sidechain) sessions too")
    include_no_cwd: bool = Field(default=False, description="sessions that do not say where they ran (personal)")
    mappings: list[str] = Field(
        default_factory=list,
        max_length=200,
        description="CWD=ORIGIN, one per field: a folder's project, e.g. /home/me/src/app=github.com/org/app",
    )


class SessionOut(Schema):
    session: str
    client: str
    file: str
    cwd: str | None
    started_at: str | None
    ended_at: str | None
    work_turns: int
    turns: int = Field(description="turns a run would process")
    cut: bool
    skip_reason: str | None
    origin: str | None
    origin_from: str = Field(description="git | map | personal: how the session's project was found")
    palace: dict[str, Any] = Field(description="{id, name, chosen: project | personal}")
    why: str


class EstimateOut(Schema):
    method: str = Field(description="how this was produced: no model calls, no embedding")
    sessions: int
    sessions_kept: int
    sessions_skipped: int
    turns: int
    turns_left_out: int
    skip_reasons: dict[str, int]
    turns_by_palace: dict[str, int]
    files_rejected: list[dict[str, str]]
    rules: dict[str, Any]
    per_session: list[SessionOut]
    git_read: bool = Field(description="false: uploads' folders are not this server's, only mappings name projects")


class RunOut(Schema):
    id: int
    state: str
    pause_requested: bool
    progress: float = Field(description="turns done / turns total, 0 to 1")
    turns_total: int
    turns_done: int
    memories: int
    episodes: int
    facts: int
    sessions: int
    rate: float | None = Field(description="turns a second")
    eta_seconds: float | None
    sessions_skipped: dict[str, int] = Field(description="whole sessions left out, by reason")
    turns_skipped: dict[str, int] = Field(description="turns that kept nothing or were imported already, by reason")
    extraction: dict[str, Any] = Field(
        description="how the memories were produced: turns_by_method (llm | rules), fallbacks, summaries_by_method"
    )
    rules: dict[str, Any]
    estimate: dict[str, Any]
    files: list[str]
    error: str
    ended: bool
    created_at: str | None
    started_at: str | None
    finished_at: str | None


class StartedOut(RunOut):
    queued: bool = Field(description="the worker was asked to run it")
    note: str


def _rules(rules: RulesIn) -> BackfillRules:
    try:
        return BackfillRules.from_mapping(rules.model_dump())
    except RulesError as exc:
        raise InvalidInput(str(exc), field=exc.field) from None


def _read(files: list[UploadedFile]) -> Transcripts:
    if len(files) > MAX_FILES:
        raise InvalidInput(f"files: at most {MAX_FILES} files an upload; send an archive (.zip, .tar.gz) of more")
    try:
        return backfill_read_uploads(uploads=[(f.name or "upload", f.read()) for f in files])
    except InvalidInput as exc:
        raise InvalidInput(f"files: {exc.message}", field="files") from None


def _estimate_out(request: HttpRequest, files: list[UploadedFile], rules: RulesIn) -> dict[str, Any]:
    read = _read(files)
    plan = backfill_estimate(
        user=caller_of(request).user, sessions=read.sessions, rules=_rules(rules), use_git=False, rejected=read.rejected
    )
    return {**plan.as_dict(), "git_read": False}


@router.post("/estimate", response={200: EstimateOut, **ERRORS})
def backfill_estimate_post(
    request: HttpRequest, files: File[list[UploadedFile]], rules: Form[RulesIn]
) -> dict[str, Any]:
    """What a run of these uploads with these rules would do, per session (turns, the palace it goes to and why,
    what is skipped and why). Zero cost: no model is asked, nothing is embedded or stored."""
    return _estimate_out(request, files, rules)


@router.post("/runs", response={202: StartedOut, **ERRORS})
def backfill_runs_post(
    request: HttpRequest, files: File[list[UploadedFile]], rules: Form[RulesIn]
) -> Status[dict[str, Any]]:
    """Store the turns the estimate keeps and queue the run on the worker: 202 with the run. Follow it at
    GET /runs/{id}. Turns an earlier run stored are counted, never stored twice."""
    caller = caller_of(request)
    caller.require_write()
    read = _read(files)
    run = backfill_start(
        user=caller.user,
        sessions=read.sessions,
        rules=_rules(rules),
        files=read.files,
        use_git=False,
        rejected=read.rejected,
    )
    queued, note = _queue(run.pk)
    return Status(202, {**backfill_run_view(run=run), "queued": queued, "note": note})


def _queue(run_id: int) -> tuple[bool, str]:
    try:
        enqueue_backfill_run(run_id)
    except Exception as exc:  # the turns are stored; a worker that starts takes up the queued run
        log.warning("backfill: could not queue run %s: %s", run_id, exc)
        return False, "stored; the worker queue is unavailable, so the run starts when a worker starts"
    return True, "queued: the worker runs it"


@router.get("/runs", response={200: list[RunOut], **ERRORS})
def backfill_runs_get(request: HttpRequest) -> list[dict[str, Any]]:
    """Your backfill runs, newest first (at most 50)."""
    return [backfill_run_view(run=r) for r in backfill_runs(user=caller_of(request).user)]


@router.get("/runs/{int:run_id}", response={200: RunOut, **ERRORS})
def backfill_run_get_one(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """One of your runs: state, progress (turns done of total, rate, ETA), skip reasons, how memories were made."""
    return backfill_run_view(run=backfill_run_get(user=caller_of(request).user, run_id=run_id))


@router.post("/runs/{int:run_id}/pause", response={200: RunOut, **ERRORS})
def backfill_run_pause(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """Ask a queued or running run to pause: it stops after the batch in flight (kept). 422 in any other state."""
    caller = caller_of(request)
    caller.require_write()
    return backfill_run_view(run=backfill_pause(user=caller.user, run_id=run_id))


@router.post("/runs/{int:run_id}/resume", response={200: RunOut, **ERRORS})
def backfill_run_resume(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """Resume a paused (or failed) run where it stopped. 422 in any other state."""
    caller = caller_of(request)
    caller.require_write()
    run = backfill_resume(user=caller.user, run_id=run_id)
    _queue(run.pk)
    return backfill_run_view(run=run)
