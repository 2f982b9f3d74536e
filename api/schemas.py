"""Shared response shapes and input types."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Literal

from django.conf import settings
from ninja import Schema
from pydantic import AfterValidator, Field

from memory.save import MAX_PLACARD_CHARS
from memory.search import FALLBACKS


class ErrorDetail(Schema):
    code: str
    message: str


class ErrorOut(Schema):
    error: ErrorDetail


def _utc_instant(value: datetime) -> datetime:
    """An aware time as UTC: PostgreSQL refuses UTC offsets beyond ±15:59 that ISO 8601 (and Python) allow, and an
    offset can push a date past year 1 or 9999. Either was a 500; now the offset is applied here, or it is a 422."""
    if value.tzinfo is None:
        return value
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("date out of range: with its UTC offset it must fall between the years 1 and 9999") from None


Instant = Annotated[datetime, AfterValidator(_utc_instant)]
"""A datetime input, stored and compared as UTC (any offset ISO 8601 allows)."""


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
