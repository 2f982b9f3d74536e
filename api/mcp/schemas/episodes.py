"""memory_episode_timeline's output: episodes grouped by session, each group headed by its summary and saying how
the summary was made. Wire names are camelCase, as in api/mcp/schemas/common.py."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from api.mcp.schemas.common import MemoryRow, Out, PalaceScoped


class EpisodeSessionOut(Out):
    session: str = Field(description='the source session ("" for episodes saved without one)')
    palace: str = Field(description='"my palace" or the project origin')
    summary: str
    summary_method: Literal["llm", "rules", "first_episode", "none"] = Field(
        description=(
            "llm or rules: the capture session's summary (live capture or backfill); first_episode: no summary of "
            "yours for this session, the first episode shown stands in; none: no session"
        )
    )
    summary_source: Literal["capture", "backfill", "episode", "none"]
    summary_fallback: str = Field(default="", description="why the rules summarised, when they did")
    first: datetime
    last: datetime
    count: int = Field(description="episodes of this session in the range")
    episodes: list[MemoryRow] = Field(description="in the order they happened (up to the per-group limit)")


class EpisodeTimelineOut(PalaceScoped):
    mode: Literal["range", "session", "around"]
    palaces: list[str] = Field(description="the palaces read")
    start: datetime | None
    end: datetime | None
    session: str | None = None
    around: MemoryRow | None = Field(default=None, description="the anchor memory (around mode)")
    window_minutes: int | None = None
    groups: list[EpisodeSessionOut]
    next_cursor: str | None = Field(default=None, description="pass as `cursor` for older sessions")
