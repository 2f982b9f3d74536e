"""REST door to capture: `POST /api/v1/capture` takes the turns of one session from a client (a hook, a wrapper),
stores each turn once (capture.services) and queues the worker's extraction (capture.tasks), answering 202 at once:
capture never makes the agent wait for a model or the embedder. Bearer token with the write scope only."""

from __future__ import annotations

import logging
from datetime import UTC
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Router, Schema, Status
from pydantic import ConfigDict

from api.auth import TokenAuth, caller_of
from api.schemas import ErrorOut, Instant
from capture.services import MAX_TURN_CHARS, MAX_TURNS_PER_REQUEST, IngestResult, TurnIn, capture_ingest
from capture.tasks import enqueue_capture_process
from palace.errors import PermissionDenied

log = logging.getLogger(__name__)
router = Router(tags=["capture"])

# A client's session id: a UUID (Claude Code, Codex) or any id of these characters.
SESSION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,199}$"


class TurnBody(Schema):
    # More fields are welcome (a client may send what its transcript has); these are the ones read.
    model_config = ConfigDict(extra="ignore")

    index: int = Field(ge=0, le=10_000_000, description="the turn's position in the session, from 0: its key")
    role: Literal["user", "assistant", "tool"]
    text: str = Field(default="", max_length=MAX_TURN_CHARS, description="the turn's text (a tool turn's is dropped)")
    tool: str | None = Field(default=None, max_length=200, description="a tool turn's tool name (kept; output never)")
    at: Instant | None = Field(default=None, description="when the turn happened (ISO 8601); omitted: now")


class CaptureIn(Schema):
    model_config = ConfigDict(extra="ignore")

    session: str = Field(pattern=SESSION_PATTERN, description="the client's session id (≤ 200 characters)")
    client: str = Field(default="generic", max_length=64, description="claude-code, codex, openai, generic, …")
    origin: str | None = Field(
        default=None, max_length=400, description="the git origin of the working directory; null: none"
    )
    cwd: str | None = Field(default=None, max_length=1000)
    mode: Literal["light", "eager", "off"] | None = Field(
        default=None,
        description="light: user turns; eager: assistant turns too; off: store nothing; null: the capture_mode setting",
    )
    turns: list[TurnBody] = Field(default_factory=list, max_length=MAX_TURNS_PER_REQUEST)


class PalaceChoiceOut(Schema):
    id: int
    name: str
    label: str
    chosen: str = Field(description="project | personal")
    why: str


class CaptureOut(Schema):
    session: str
    palace: PalaceChoiceOut | None
    stored: int = Field(description="turns stored by this request (new)")
    duplicates: int = Field(description="turns already stored (or repeated in this request): left as they were")
    pending: int = Field(description="turns of the session waiting for extraction, earlier failures included")
    mode: str
    mode_source: str = Field(description="request | setting")
    queued: bool = Field(description="the worker was asked to extract the pending turns")
    note: str
    redactions: list[str] = Field(description="kinds of secrets scrubbed from the stored turns")
    echoes: list[str] = Field(description="Atrium recall removed from the turns (anti-echo), by tool")


def _queue(result: IngestResult) -> tuple[bool, str]:
    if result.session is None or result.pending == 0:
        return False, result.note or "nothing to extract"
    try:
        enqueue_capture_process(result.session.pk)
    except Exception as exc:  # the turns are stored; the beat's replay extracts them when the queue is back
        log.warning("capture: could not queue session %s: %s", result.session.pk, exc)
        return False, "stored; the worker queue is unavailable, so the replay (every 5 minutes) extracts them"
    return True, "stored; the worker extracts the pending turns"


def _out(result: IngestResult, queued: bool, note: str) -> dict[str, Any]:
    routing = result.routing
    palace = None
    if routing is not None:
        p = routing.palace
        palace = {"id": p.pk, "name": p.name, "label": p.label, "chosen": routing.chosen, "why": routing.why}
    return {
        "session": result.session_key,
        "palace": palace,
        "stored": result.stored,
        "duplicates": result.duplicates,
        "pending": result.pending,
        "mode": result.mode.mode,
        "mode_source": result.mode.source,
        "queued": queued,
        "note": note,
        "redactions": result.redactions,
        "echoes": result.echoes,
    }


@router.post(
    "",
    auth=TokenAuth(),
    response={200: CaptureOut, 202: CaptureOut, 401: ErrorOut, 403: ErrorOut, 422: ErrorOut},
)
def capture_post(request: HttpRequest, payload: CaptureIn) -> Status[dict[str, Any]]:
    """Store the turns of one session, each once (a resend stores only what is new), and queue their extraction:
    202 with the palace they go to and why. Mode off stores nothing: 200, and `note` says so."""
    caller = caller_of(request)
    if not caller.can_write:
        raise PermissionDenied("this token has the read scope; capture needs a token with the write scope")
    turns = [
        TurnIn(
            index=t.index,
            role=t.role,
            text=t.text,
            tool=t.tool,
            at=t.at.replace(tzinfo=UTC) if t.at is not None and t.at.tzinfo is None else t.at,
        )
        for t in payload.turns
    ]
    result = capture_ingest(
        caller=caller,
        session_key=payload.session,
        turns=turns,
        client=payload.client,
        origin=payload.origin,
        cwd=payload.cwd or "",
        mode=payload.mode,
    )
    if result.session is None:
        return Status(200, _out(result, False, result.note))
    queued, note = _queue(result)
    return Status(202, _out(result, queued, note))
