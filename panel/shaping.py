"""Presentation shaping for the panel's pages, with no database work: the last-7-days bar charts and the corridor
graph's layout. The figures come from the shared selectors (memory.selectors.stats, palace.selectors,
memory.selectors.rooms)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime

from memory.selectors import GraphRoom, MemoryStats, RoomGraph, day_start, last_days
from palace.oplog import CATEGORIES, op_category
from panel import labels


@dataclass
class Bar:
    day: date
    count: int
    x: int
    y: int
    height: int


@dataclass
class Week:
    days: list[Bar]
    total: int
    by_category: dict[str, int] = field(default_factory=dict)

    @property
    def peak(self) -> int:
        return max((b.count for b in self.days), default=0)


def week_window(now: datetime) -> tuple[list[date], datetime]:
    """The last seven local days, oldest first, and the moment the first of them began."""
    days = last_days(now)
    return days, day_start(days[0])


def bars(days: list[date], counts: Mapping[date, int], *, height: int = 28, width: int = 12, gap: int = 4) -> list[Bar]:
    """Geometry of a small server-rendered SVG bar chart (one bar per day, scaled to the busiest day)."""
    peak = max(counts.values(), default=0) or 1
    out = []
    for i, day in enumerate(days):
        count = counts.get(day, 0)
        h = round(height * count / peak) if count else 0
        out.append(Bar(day=day, count=count, x=i * (width + gap), y=height - h, height=h))
    return out


def memory_week(created_by_day: Mapping[date, int]) -> Week:
    """New memories per day (memory.selectors.stats' created_by_day: the last seven local days, oldest first)."""
    days = list(created_by_day)
    return Week(days=bars(days, created_by_day), total=sum(created_by_day.values()))


@dataclass
class Summary:
    """Today's summary bar."""

    memories: int  # active
    open: int  # contradictions waiting for a decision
    week: Week  # new memories per day
    by_kind: dict[str, int]


def today_summary(stats: MemoryStats) -> Summary:
    return Summary(
        memories=sum(stats.by_kind.values()),
        open=stats.pending_contradictions,
        week=memory_week(stats.created_by_day),
        by_kind=stats.by_kind,
    )


def oplog_week(days: list[date], counts: Iterable[tuple[date, str, int]]) -> Week:
    """Op rows per day and per category from palace.selectors.oplog_day_counts over `days`."""
    per_day: dict[date, int] = {}
    by_category = dict.fromkeys(CATEGORIES, 0)
    for day, op, n in counts:
        per_day[day] = per_day.get(day, 0) + n
        by_category[op_category(op)] += n
    return Week(days=bars(days, per_day), total=sum(per_day.values()), by_category=by_category)


# --- the corridor graph ----------------------------------------------------------------------------------------


@dataclass
class Node:
    id: int
    name: str
    kind: str
    slots: int
    x: float
    y: float
    r: float


@dataclass
class Link:
    a: int
    b: int
    n: int
    x1: float = 0.0
    y1: float = 0.0
    x2: float = 0.0
    y2: float = 0.0


@dataclass
class Graph:
    nodes: list[Node]
    links: list[Link]
    total_rooms: int
    inner_edges: int  # edges between memories of the same room (not drawn)
    width: int = 640
    height: int = 420


def corridor_graph(found: RoomGraph) -> Graph:
    """Rooms as nodes, the edges between their memories as weighted links, laid out in kind sectors so the picture
    makes sense before (or without) the browser's force layout."""
    graph = Graph(
        nodes=_layout(found.rooms),
        links=[Link(a=a, b=b, n=n) for (a, b), n in found.links.items()],
        total_rooms=found.total_rooms,
        inner_edges=found.inner_edges,
    )
    at = {node.id: node for node in graph.nodes}
    for link in graph.links:
        link.x1, link.y1, link.x2, link.y2 = at[link.a].x, at[link.a].y, at[link.b].x, at[link.b].y
    return graph


def _layout(rooms: list[GraphRoom], width: int = 640, height: int = 420) -> list[Node]:
    by_kind: dict[str, list[GraphRoom]] = {}
    for room in sorted(rooms, key=lambda r: (r.palace_id, r.ordinal)):
        by_kind.setdefault(room.kind, []).append(room)
    nodes = []
    sector = 2 * math.pi / len(labels.KINDS)
    for k, kind in enumerate(labels.KINDS):
        members = by_kind.get(kind, [])
        for i, room in enumerate(members):
            ring = 1 + i // 8
            angle = sector * k + sector * ((i % 8) + 0.5) / 8
            radius = min(width, height) * (0.14 + 0.09 * ring)
            nodes.append(
                Node(
                    id=room.id,
                    name=room.name,
                    kind=kind,
                    slots=room.slots,
                    x=round(width / 2 + radius * math.cos(angle), 1),
                    y=round(height / 2 + radius * math.sin(angle), 1),
                    r=round(7 + min(room.slots, 9) * 0.9, 1),
                )
            )
    return nodes
