"""REST door to the episode timeline: episodes grouped by session, each session headed by its summary
(capture.timeline, the same read as the MCP tool memory_episode_timeline and the panel's Episodes page)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import Field, WithJsonSchema

from api.auth import caller_of
from api.schemas import ErrorOut, MemoryRowOut, ProjectOrigin, memory_row_out
from capture.timeline import MAX_WINDOW_MINUTES, Timeline, episode_timeline, timeline_bound
from memory.models import Memory
from palace.errors import InvalidInput
from palace.selectors import palace_get, palace_ids_readable

router = Router(tags=["episodes"])

ERRORS: dict[int, Any] = {401: ErrorOut, 404: ErrorOut, 422: ErrorOut}


# A date (the whole day) or a date-time: parsed by capture.timeline.timeline_bound, which a union of pydantic's date
# and datetime cannot stand in for (its lax mode reads "2026-03-01T00:00:00Z" as a day and digits as a timestamp).
Bound = Annotated[
    str | None,
    Field(default=None, max_length=40, description="ISO 8601 date (the whole day) or date-time"),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}, {"type": "null"}]}
    ),
]


class TimelineQuery(Schema):
    start: Bound = None
    end: Bound = None
    session: str | None = Field(default=None, min_length=1, max_length=200, description="one session's episodes")
    around: int | None = Field(default=None, ge=1, le=2**63 - 1, description="a memory id: episodes near its moment")
    window_minutes: int | None = Field(default=None, ge=1, le=MAX_WINDOW_MINUTES, description="with around; 60")
    palace: int | None = Field(default=None, ge=1, le=2**63 - 1, description="one palace by id")
    project: ProjectOrigin | None = None
    groups: int = Field(default=10, ge=1, le=50, description="sessions per page")
    cursor: str | None = Field(default=None, max_length=200, description="next_cursor of the previous page")


class EpisodeOut(MemoryRowOut):
    speaker: str
    session: str
    turn: str
    source: str


class SessionGroupOut(Schema):
    session: str
    palace: int
    summary: str
    summary_method: str = Field(description="llm | rules (the capture session's) | first_episode | none")
    summary_source: str = Field(description="capture | backfill | episode | none")
    summary_fallback: str
    first: datetime
    last: datetime
    count: int
    episodes: list[EpisodeOut]


class TimelineOut(Schema):
    mode: str = Field(description="range | session | around")
    palaces: list[int]
    start: datetime | None
    end: datetime | None
    session: str | None
    around: int | None
    window_minutes: int | None
    groups: list[SessionGroupOut]
    next_cursor: str | None


@router.get("/timeline", response={200: TimelineOut, **ERRORS})
def timeline(request: HttpRequest, q: Query[TimelineQuery]) -> dict[str, Any]:
    """Episodes grouped by session, newest session first, in time order inside each, every session headed by its
    one-line summary and how it was made. A range (`start`/`end`), one `session`, or `around` a memory id
    (± `window_minutes`, default 60). Every palace you may read, or one (`palace` id or `project` origin)."""
    if q.palace is not None and q.project is not None:
        raise InvalidInput("give palace or project, not both", field="palace")
    user = caller_of(request).user
    if q.palace is None and q.project is None:
        palace_ids = palace_ids_readable(user=user)
    else:
        palace_ids = [palace_get(user=user, palace_id=q.palace, origin=q.project).pk]
    found = episode_timeline(
        user=user,
        palace_ids=palace_ids,
        since=timeline_bound(q.start, field="start") if q.start else None,
        until=timeline_bound(q.end, field="end", end=True) if q.end else None,
        session=q.session,
        around=q.around,
        window_minutes=q.window_minutes,
        cursor=q.cursor or "",
        groups=q.groups,
        per_group=200 if q.session else 40,
    )
    return _timeline_out(found, palace_ids)


def _episode(m: Memory) -> dict[str, Any]:
    return {
        **memory_row_out(m),
        "speaker": m.speaker,
        "session": m.source_session,
        "turn": m.source_turn,
        "source": m.source_kind,
    }


def _timeline_out(found: Timeline, palace_ids: list[int]) -> dict[str, Any]:
    groups = [
        {
            "session": g.episodes.session,
            "palace": g.episodes.palace_id,
            "summary": g.header.text,
            "summary_method": g.header.method,
            "summary_source": g.header.source,
            "summary_fallback": g.header.fallback,
            "first": g.episodes.first,
            "last": g.episodes.last,
            "count": g.episodes.count,
            "episodes": [_episode(m) for m in g.episodes.entries],
        }
        for g in found.groups
    ]
    return {
        "mode": found.mode,
        "palaces": palace_ids,
        "start": found.since,
        "end": found.until,
        "session": found.session,
        "around": found.anchor.pk if found.anchor is not None else None,
        "window_minutes": found.window_minutes,
        "groups": groups,
        "next_cursor": found.next_cursor or None,
    }
