"""memory_ingest_history: backfill past sessions from transcript files the SERVER can read (capture.backfill).

An agent's paths name files on the machine Atrium runs on, not the agent's machine, so reading them is held down:
staff may name any path the server can read (and the git origin of each session's folder is read there, as
`atrium backfill` does); anyone else only paths under ATRIUM_BACKFILL_DIRS (resolved, symlinks followed, before
anything is opened: a path outside is refused without touching it), and git is not read for them. Everyone else
uploads transcripts through REST (POST /api/v1/backfill/estimate, /runs) or the panel's Backfill page; the refusal
says so. A dry run (the default) returns the zero-cost estimate; `run=true` starts the run on the worker.
"""

from __future__ import annotations

import logging
import os
from typing import Annotated, Literal

from django.conf import settings
from mcp_types import CallToolResult
from pydantic import Field

from api.mcp import schemas, text
from api.mcp.registry import tool
from api.mcp.runner import ToolCall
from api.mcp.runner import run as run_tool  # the tool's `run` argument takes the name
from capture.backfill import (
    backfill_estimate,
    backfill_pause,
    backfill_read_paths,
    backfill_resume,
    backfill_run_get,
    backfill_run_view,
    backfill_start,
)
from capture.importers import BackfillRules, RulesError
from capture.tasks import enqueue_backfill_run
from palace.errors import InvalidInput

log = logging.getLogger(__name__)
PER_SESSION_SHOWN = 50  # sessions the estimate lists one by one (the counts cover all)
REST_DOOR = "upload them through REST (POST /api/v1/backfill/estimate, then /api/v1/backfill/runs) or the Backfill page"


@tool("memory_ingest_history", title="Import past sessions (backfill)", write=True)
async def memory_ingest_history(
    paths: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=1000)]] | None,
        Field(
            max_length=50,
            description="Transcript files or folders ON THE ATRIUM SERVER (Claude Code JSONL, Codex rollout JSONL, "
            "OpenAI messages JSON). Staff: any path the server can read; others: only under the server's "
            "ATRIUM_BACKFILL_DIRS. Files on your own machine: upload them through REST or the Backfill page.",
        ),
    ] = None,
    run: Annotated[bool, Field(description="false (default): dry run, the estimate only; true: start the run")] = False,
    run_id: Annotated[
        int | None, Field(ge=1, le=2**63 - 1, description="A run id this tool returned: its progress (paths unused).")
    ] = None,
    action: Annotated[
        Literal["status", "pause", "resume"], Field(description="With run_id: read it, pause it or resume it.")
    ] = "status",
    window_days: Annotated[int, Field(ge=0, le=3650, description="Sessions active in the last N days; 0: all.")] = 7,
    turns_per_session: Annotated[int, Field(ge=1, le=5000, description="The first N turns of each session.")] = 20,
    max_turns: Annotated[int, Field(ge=1, le=5000, description="Turns in the whole run.")] = 200,
    include_sidechains: Annotated[bool, Field(description="Subagent (sidechain) sessions too.")] = False,
    include_no_cwd: Annotated[bool, Field(description="Sessions that do not say where they ran.")] = False,
    mappings: Annotated[
        list[Annotated[str, Field(max_length=1400)]] | None,
        Field(max_length=200, description="CWD=ORIGIN: a folder's project, e.g. /home/me/app=github.com/org/app."),
    ] = None,
) -> Annotated[CallToolResult, schemas.IngestOut]:
    """Import past agent sessions (backfill) from transcript files that the Atrium SERVER can read — not files on
    your machine: for those, tell the person to upload them at POST /api/v1/backfill/runs or on the Backfill page.
    By default a dry run: the zero-cost estimate (sessions, turns, the palace each session goes to and why, what is
    skipped and why; no model, no embedding). `run=true` stores the kept turns and starts the run on the worker;
    the answer has its id. Call again with `run_id` for its progress (`action` pause or resume it). Each session
    goes to its project's palace when you are an editor or owner there (from the git origin of its folder on the
    server, for staff, or a `mappings` entry), else to your personal palace.
    Next: check the estimate, then call again with run=true; then run_id=<id> until the state is done.
    """
    if run_id is not None:
        return await run_tool(lambda call: _lookup(call, run_id=run_id, action=action))
    raw = {
        "window_days": window_days,
        "turns_per_session": turns_per_session,
        "max_turns": max_turns,
        "include_sidechains": include_sidechains,
        "include_no_cwd": include_no_cwd,
        "mappings": mappings or [],
    }
    return await run_tool(lambda call: _ingest(call, paths=paths or [], start=run, raw=raw))


def _allowed(call: ToolCall, paths: list[str]) -> tuple[str, bool]:
    """Why the server may read these paths, and whether git is read: staff (yes), ATRIUM_BACKFILL_DIRS (no)."""
    if not paths:
        raise InvalidInput("paths: name at least one transcript file or folder on the server", field="paths")
    user = call.user
    if getattr(user, "is_staff", False) or getattr(user, "is_superuser", False):
        return "staff", True
    roots = [os.path.realpath(d) for d in settings.ATRIUM_BACKFILL_DIRS]
    if not roots:
        raise InvalidInput(f"paths: this server opens no folder to agents (ATRIUM_BACKFILL_DIRS); {REST_DOOR}")
    for raw in paths:
        real = os.path.realpath(raw) if os.path.isabs(raw) else ""
        if not any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots):
            raise InvalidInput(
                f"paths: {raw!r} is not under a folder this server opens to agents ({', '.join(roots)}; absolute "
                f"paths only); {REST_DOOR}",
                field="paths",
            )
    return "ATRIUM_BACKFILL_DIRS", False


def _ingest(call: ToolCall, *, paths: list[str], start: bool, raw: dict[str, object]) -> tuple[schemas.IngestOut, str]:
    allowed_by, use_git = _allowed(call, paths)
    try:
        rules = BackfillRules.from_mapping(raw)
    except RulesError as exc:
        raise InvalidInput(str(exc), field=exc.field) from None
    read = backfill_read_paths(paths=paths)
    plan = backfill_estimate(
        user=call.user, sessions=read.sessions, rules=rules, use_git=use_git, rejected=read.rejected
    ).as_dict()
    estimate = {**plan, "per_session": plan["per_session"][:PER_SESSION_SHOWN]}
    out = schemas.IngestOut(
        action="estimate",
        paths_allowed_by=allowed_by,  # type: ignore[arg-type]
        git_read=use_git,
        method=plan["method"],
        estimate=estimate,
        per_session_shown=len(estimate["per_session"]),
        note="dry run: nothing stored; call again with run=true to start it",
    )
    if start:
        call.caller.require_write()
        begun = backfill_start(
            user=call.user,
            sessions=read.sessions,
            rules=rules,
            files=read.files,
            use_git=use_git,
            rejected=read.rejected,
        )
        out.action, out.run = "started", _run_view(begun)
        out.note = f"{_queue(begun.pk)}; call again with run_id={begun.pk} for its progress"
    return out, text.ingested(out)


def _queue(run_id: int) -> str:
    try:
        enqueue_backfill_run(run_id)
    except Exception as exc:  # the turns are stored; a worker that starts takes up a queued run
        log.warning("memory_ingest_history: could not queue run %s: %s", run_id, exc)
        return "stored; the worker queue is unavailable, so the run starts when a worker starts"
    return "started: the worker runs it"


def _run_view(run_obj: object) -> dict[str, object]:
    view = backfill_run_view(run=run_obj)  # type: ignore[arg-type]
    view.pop("estimate", None)  # the run's estimate is the one this tool returned before it
    return view


def _lookup(call: ToolCall, *, run_id: int, action: str) -> tuple[schemas.IngestOut, str]:
    note = ""
    if action == "pause":
        found, done = backfill_pause(user=call.user, run_id=run_id), "paused"
        note = "the run stops after the batch in flight"
    elif action == "resume":
        found, done = backfill_resume(user=call.user, run_id=run_id), "resumed"
        note = _queue(found.pk)
    else:
        found, done = backfill_run_get(user=call.user, run_id=run_id), "status"
    view = _run_view(found)
    out = schemas.IngestOut(
        action=done,  # type: ignore[arg-type]
        paths_allowed_by="none",
        git_read=False,
        method="the run's stored progress (the worker updates it after each batch)",
        run=view,
        note=note,
    )
    return out, text.ingested(out)
