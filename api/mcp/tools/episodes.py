"""memory_episode_timeline: what happened, session by session — a date range, one session, or the episodes around a
memory's moment — each session headed by its one-line summary (capture.timeline)."""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from api.mcp import mapping, schemas, text
from api.mcp.registry import tool
from api.mcp.runner import ToolCall, run
from capture.timeline import MAX_WINDOW_MINUTES, Timeline, episode_timeline, timeline_bound
from palace.selectors import palace_labels

When = Annotated[
    str | None,
    Field(
        default=None,
        max_length=40,
        description="ISO 8601 date (2026-03-01: the whole day) or date-time (2026-03-01T09:30:00Z).",
    ),
]


@tool("memory_episode_timeline", title="Episodes by session")
async def memory_episode_timeline(
    start: When = None,
    end: When = None,
    session: Annotated[
        str | None, Field(max_length=200, description="One session's episodes (a session id from a header).")
    ] = None,
    around: Annotated[
        int | None,
        Field(ge=1, le=2**63 - 1, description="A memory id: the episodes ± window_minutes of when it happened."),
    ] = None,
    window_minutes: Annotated[
        int | None, Field(ge=1, le=MAX_WINDOW_MINUTES, description="With around: the window (default 60).")
    ] = None,
    project: schemas.Project = None,
    groups: Annotated[int, Field(ge=1, le=50, description="Sessions per page (1–50).")] = 10,
    cursor: Annotated[str | None, Field(max_length=200, description="From a previous page: older sessions.")] = None,
) -> Annotated[CallToolResult, schemas.EpisodeTimelineOut]:
    """What happened, session by session: episode memories (turns of agent sessions, captured, backfilled or saved
    with a session) grouped by session, newest session first, in time order inside each; every session is headed
    by its one-line summary, and says how that summary was made (model, rules, or its first episode standing in).
    Reads every palace you belong to, or only `project`.

    Use start/end for a date range, session to drill into one session, or around=<memory id> (± window_minutes,
    default 60) to see what else happened near a memory's moment. around does not combine with start/end.
    Next: memory_examine ids for full text; memory_search for a topic rather than a time.
    """
    return await run(
        lambda call: _timeline(
            call,
            start=start,
            end=end,
            session=session,
            around=around,
            window_minutes=window_minutes,
            project=project,
            groups=groups,
            cursor=cursor,
        )
    )


def _timeline(
    call: ToolCall,
    *,
    start: str | None,
    end: str | None,
    session: str | None,
    around: int | None,
    window_minutes: int | None,
    project: str | None,
    groups: int,
    cursor: str | None,
) -> tuple[schemas.EpisodeTimelineOut, str]:
    labels = palace_labels(user=call.user)
    palace_ids = [call.palace(project).pk] if project else list(labels)
    found = episode_timeline(
        user=call.user,
        palace_ids=palace_ids,
        since=timeline_bound(start, field="start") if start else None,
        until=timeline_bound(end, field="end", end=True) if end else None,
        session=session,
        around=around,
        window_minutes=window_minutes,
        cursor=cursor or "",
        groups=groups,
        per_group=200 if session else 40,
    )
    out = timeline_out(found, labels, palace_ids)
    return out, text.episode_timeline(out)


def timeline_out(found: Timeline, labels: dict[int, str], palace_ids: list[int]) -> schemas.EpisodeTimelineOut:
    return schemas.EpisodeTimelineOut(
        mode=found.mode,  # type: ignore[arg-type]
        palaces=[labels[p] for p in palace_ids if p in labels],
        start=found.since,
        end=found.until,
        session=found.session,
        around=mapping.memory_row(found.anchor, labels) if found.anchor is not None else None,
        window_minutes=found.window_minutes,
        groups=[
            schemas.EpisodeSessionOut(
                session=g.episodes.session,
                palace=labels.get(g.episodes.palace_id, str(g.episodes.palace_id)),
                summary=g.header.text,
                summary_method=g.header.method,  # type: ignore[arg-type]
                summary_source=g.header.source,  # type: ignore[arg-type]
                summary_fallback=g.header.fallback,
                first=g.episodes.first,
                last=g.episodes.last,
                count=g.episodes.count,
                episodes=[mapping.memory_row(m, labels) for m in g.episodes.entries],
            )
            for g in found.groups
        ],
        next_cursor=found.next_cursor or None,
    )


__all__ = ["memory_episode_timeline"]
