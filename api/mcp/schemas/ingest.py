"""The output of memory_ingest_history (backfill from transcripts the server can read). Wire names are camelCase,
as in api/mcp/schemas/common.py; the estimate and the run keep the REST door's shapes (snake_case keys inside)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from api.mcp.schemas.common import Out


class IngestOut(Out):
    action: Literal["estimate", "started", "status", "paused", "resumed"] = Field(
        description="estimate: a dry run, nothing stored; started: a run was queued; status/paused/resumed: a run"
    )
    paths_allowed_by: Literal["staff", "ATRIUM_BACKFILL_DIRS", "none"] = Field(
        description="why this server read the paths: you are staff, or they are under ATRIUM_BACKFILL_DIRS"
    )
    git_read: bool = Field(description="whether the git origin of each session's folder was read on this server")
    method: str = Field(description="how the result was produced (the estimate: no model calls, no embedding)")
    estimate: dict[str, Any] | None = Field(
        default=None, description="sessions, turns, the palace each goes to and why, skip reasons (per_session cut)"
    )
    per_session_shown: int = Field(default=0, description="how many sessions `estimate.per_session` lists")
    run: dict[str, Any] | None = Field(
        default=None,
        description="the run: id, state, progress 0-1, turns done/total, rate, ETA, skip reasons, and `extraction` "
        "(turns_by_method: llm | rules; summaries_by_method)",
    )
    note: str = ""
