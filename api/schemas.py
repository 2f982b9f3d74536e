"""Shared response shapes and input types."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from typing import TYPE_CHECKING, Annotated, Any, Literal
from zoneinfo import ZoneInfo

from django.conf import settings
from ninja import Schema
from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, WithJsonSchema

from memory.jobs import distill_job_result
from memory.models import DistillJob, Memory
from memory.save import MAX_PLACARD_CHARS
from memory.search import FALLBACKS


class ErrorDetail(Schema):
    code: str
    message: str


class ErrorOut(Schema):
    error: ErrorDetail


class MemoryRowOut(Schema):
    """A memory as a row of a list that is not itself about memories (an entity's linked memories, a session's
    episodes): what to show and where it sits, without the full record GET /memories/{id} gives."""

    id: int
    palace: int
    kind: str
    status: str
    placard: str
    content: str
    slot: str | None
    occurred_at: datetime
    created_at: datetime


def memory_row_out(m: Memory) -> dict[str, Any]:
    """The fields of MemoryRowOut; a door that lists more of a memory adds its own to this dict."""
    return {
        "id": m.pk,
        "palace": m.palace_id,
        "kind": m.kind,
        "status": m.status,
        "placard": m.placard,
        "content": m.content,
        "slot": m.slot.coordinate if m.slot_id is not None and m.slot is not None else None,
        "occurred_at": m.occurred_at,
        "created_at": m.created_at,
    }


class ZoneAssumed(datetime):
    """A moment that was given without a time zone (a bare date or a naive time) and read in the server's time zone
    (settings.TIME_ZONE). Still an ordinary aware datetime in UTC; the type lets a door say which zone it assumed."""


DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
LEAP_SECOND = re.compile(r"(T\d{2}:\d{2}:)60(?:\.\d+)?")
INSTANT_HELP = (
    "ISO 8601 date-time (2026-03-02T14:05:00+01:00) or date (2026-03-02: the start of that day); without a time "
    "zone it is read in the server's time zone"
)


def _read_instant(value: object) -> object:
    """Text is read here, not by pydantic's lax datetime (whose message names no format): RFC 3339 (lower-case t/z,
    a leap second as the last instant of its minute), a bare date as the start of that day. Numbers (Unix time)
    and datetimes go on to pydantic unchanged."""
    if not isinstance(value, str):
        return value
    text = value.strip().upper()
    try:
        if DATE_ONLY.fullmatch(text):
            return datetime.combine(date.fromisoformat(text), time.min)
        return datetime.fromisoformat(LEAP_SECOND.sub(r"\g<1>59.999999", text))
    except ValueError:
        raise ValueError(f"expected an {INSTANT_HELP}, not {value[:40]!r}") from None


def _utc_instant(value: datetime) -> datetime:
    """An aware time as UTC. A naive one (a bare date or a time without offset) is read in the server's time zone,
    and marked ZoneAssumed so the answer can say so; comparing it with stored aware times was a TypeError (a 500,
    a bare MCP "Error executing tool"). PostgreSQL refuses UTC offsets beyond ±15:59 that ISO 8601 (and Python)
    allow, and an offset can push a date past year 1 or 9999. Either was a 500; now the offset is applied here, or
    it is a 422."""
    assumed = value.tzinfo is None
    if assumed:
        value = value.replace(tzinfo=server_zone())
    try:
        moment = value.astimezone(UTC)
    except OverflowError:
        raise ValueError("date out of range: with its UTC offset it must fall between the years 1 and 9999") from None
    if assumed:
        return ZoneAssumed(
            moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second, moment.microsecond, UTC
        )
    return moment


def server_zone() -> ZoneInfo:
    return ZoneInfo(settings.TIME_ZONE)


def zone_note(**moments: datetime | None) -> str | None:
    """What a result says when some of its date arguments had no time zone: which, and the zone they were read in;
    None when every one carried its own."""
    named = [name for name, moment in moments.items() if isinstance(moment, ZoneAssumed)]
    if not named:
        return None
    return f"{', '.join(named)} had no time zone: read in {settings.TIME_ZONE} (the server's time zone)"


Instant = Annotated[
    datetime,
    BeforeValidator(_read_instant),
    AfterValidator(_utc_instant),
    WithJsonSchema({"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}]}),
]
"""A datetime input, stored and compared as UTC: any offset ISO 8601 allows, or none (a bare date or a naive time,
read in the server's time zone and marked ZoneAssumed). The one date type of every REST and MCP input."""


# Every REST field that carries memory content has one of these types, so the OpenAPI document states the limit the
# save pipeline enforces (memory.save.prepare_item) and a longer text is a 422 naming the field, before any work.
CONTENT_LIMIT = settings.ATRIUM_MAX_CONTENT_CHARS
MemoryContent = Annotated[
    str,
    Field(
        min_length=1,
        max_length=CONTENT_LIMIT,
        description=f"the memory's text: one idea, at most {CONTENT_LIMIT} characters",
    ),
]
MergedContent = Annotated[
    str,
    Field(
        max_length=CONTENT_LIMIT,
        description=f"decision=merge only: the corrected text that replaces both, at most {CONTENT_LIMIT} characters",
    ),
]
Placard = Annotated[str, Field(max_length=MAX_PLACARD_CHARS, description="a short cue: unique, distinctive, dated")]


ProjectOrigin = Annotated[
    str,
    Field(
        min_length=1,
        max_length=400,
        description="a project's git origin (github.com/org/repo, any spelling); give palace or project, not both",
    ),
]


FALLBACK_CHOICES: tuple[str, ...] = ("none", *FALLBACKS)
"""What a search may fall back to when nothing matches: "none", or one of memory.search's fallbacks."""

if TYPE_CHECKING:
    FallbackName = str
else:
    # A Literal of the same values, so OpenAPI and the MCP inputSchema list them and a wrong one is refused with
    # the allowed values named (as palace.kinds.KindName does for the kinds).
    FallbackName = Literal[FALLBACK_CHOICES]

FALLBACK_HELP = (
    "What to return when nothing matches: 'overview' (the room directory and the most recent and most reinforced "
    "memories, labelled overview, never evidence) or 'none'. Omitted: your setting (none unless you changed it)."
)


# --- a distillation job, as both doors answer it (REST /distill/jobs, MCP memory_distill) ---------------------------
# The wire names differ (snake_case on REST, camelCase on MCP) and each door adds its own ids, so each keeps its own
# output class; the states, the fields of a cluster and the values come from here.

DistillJobState = Literal["queued", "running", "done", "failed"]
DistillDelivery = Literal["inline", "queued", "lookup"]
DistillMode = Literal["suggest", "apply"]


class DistillClusterFields(BaseModel):
    # A cluster the job found (memory.jobs.DistillCluster as the doors show it): REST's ClusterOut and MCP's
    # DistillClusterOut are this with their door's base (no docstring here: it would become theirs in the schemas).
    kind: str
    member_ids: list[int]
    min_similarity: float
    content: str
    placard: str
    producer: str
    fallback: str
    confidence: float
    rule_id: int | None
    skipped: str


def distill_job_answer(job: DistillJob, *, delivery: str) -> dict[str, Any]:
    """The state and result both doors give of a job; the result's parts are empty (llm_configured null) until the
    worker has done it."""
    result = distill_job_result(job)
    return {
        "state": job.state,
        "delivery": delivery,
        "mode": job.mode,
        "llm_configured": result.llm_configured if result is not None else None,
        "applied": result.applied if result is not None else 0,
        "clusters": [{name: getattr(c, name) for name in DistillClusterFields.model_fields} for c in result.clusters]
        if result is not None
        else [],
        "error": job.error,
    }
