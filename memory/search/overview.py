"""The `overview` fallback of memory.search: what a palace holds, for a search where nothing matched.

Off unless the caller asks (`fallback="overview"`); built only on a miss. It is the room directory (per kind the
room count, the active memories and the newest rooms) and the most recent and the most reinforced active memories
of the searched palaces. Every entry is labelled "overview" and nothing else: it is not ranked against the query,
carries no arm rank (never `sem#`/`lex#`), gets no evidence ref, is not registered in an evidence batch and is not
reinforced, so it can never be cited or taken for an answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from memory.models import Memory
from memory.selectors import KindRooms, room_directory_head
from palace.models import Palace

__all__ = ["OVERVIEW_LABEL", "Overview", "OverviewEntry", "palace_overview"]

OVERVIEW_LABEL = "overview"
RECENT = 5
REINFORCED = 5


@dataclass(frozen=True)
class OverviewEntry:
    memory: Memory
    why: str  # "recent" or "reinforced"
    label: str = OVERVIEW_LABEL


@dataclass
class Overview:
    label: str = OVERVIEW_LABEL
    rooms: dict[int, list[KindRooms]] = field(default_factory=dict)  # palace id -> its bounded room directory
    entries: list[OverviewEntry] = field(default_factory=list)
    at: datetime | None = None


def palace_overview(*, palaces: list[int], now: datetime) -> Overview:
    """The overview of these (readable, already resolved) palaces: room directories, then up to RECENT newest and
    up to REINFORCED most reinforced active memories (a memory in both lists appears once, as recent)."""
    active = (
        Memory.objects.filter(palace_id__in=palaces, status=Memory.Status.ACTIVE)
        .defer("search_vector", "embedding")
        .select_related("slot__room")
    )
    recent = list(active.order_by("-created_at", "-pk")[:RECENT])
    seen = {m.pk for m in recent}
    reinforced = [
        m
        for m in active.filter(hit_count__gt=0).order_by("-hit_count", "-pk")[: REINFORCED + RECENT]
        if m.pk not in seen
    ][:REINFORCED]
    return Overview(
        rooms={p.pk: room_directory_head(palace=p) for p in Palace.objects.filter(pk__in=palaces).order_by("pk")},
        entries=[OverviewEntry(memory=m, why="recent") for m in recent]
        + [OverviewEntry(memory=m, why="reinforced") for m in reinforced],
        at=now,
    )
