"""Presentation shaping for the panel's pages, with no database work: the last-7-days bar charts and the corridor
graph's layout. The figures come from the shared selectors (memory.selectors.stats, palace.selectors,
memory.selectors.rooms)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

from memory.selectors import LINK_KINDS, GraphRoom, MemoryStats, RoomGraph, day_start, last_days
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
# One panel per palace (edges and entities never cross palaces): its rooms on a circle in directory order (kind, then
# ordinal), so each kind holds an arc; sized by active memories; corridors drawn as chords bent towards the centre
# (each kind of corridor between one pair bent a little more, so they do not overlap), links inside a room as a
# small loop on the inner side. The same data always gives the same picture.

PANEL_WIDTH = 640
PANEL_HEIGHT = 460
LABELLED_ROOMS = 48  # more rooms than this on one panel: names in the tooltip and the table only
_KIND_ORDER = {kind: i for i, kind in enumerate(labels.KINDS)}


@dataclass
class Node:
    id: int
    name: str  # the stored name; the template shows labels.room_label(name)
    kind: str
    memories: int
    x: float
    y: float
    r: float
    label_x: float = 0.0
    label_y: float = 0.0
    anchor: str = "middle"


@dataclass
class Link:
    """One kind of corridor between two rooms (a == b: inside one room), as an SVG path."""

    a: int
    b: int
    kind: str
    n: int
    path: str


@dataclass
class Corridor:
    """A row of the corridors table: the two rooms' names and the counts by kind."""

    a: str
    b: str  # "" for links inside room a
    counts: dict[str, int]


@dataclass
class Panel:
    palace_id: int
    palace: str  # "my palace" or the project's origin
    nodes: list[Node]
    links: list[Link]
    corridors: list[Corridor]
    labelled: bool
    width: int = PANEL_WIDTH
    height: int = PANEL_HEIGHT


@dataclass
class Graph:
    panels: list[Panel]
    total_rooms: int
    shown_rooms: int
    corridors: int  # pairs of distinct rooms with at least one link
    by_kind: dict[str, int]  # links by kind, inside rooms included


def corridor_graph(found: RoomGraph, *, palaces: Sequence[tuple[int, str]]) -> Graph:
    """The corridor page's picture of `found`, one panel per palace of `palaces` ((id, label) in scope order)."""
    panels = [_panel(found, palace_id, label) for palace_id, label in palaces]
    by_kind = dict.fromkeys(LINK_KINDS, 0)
    for link in found.links:
        for kind, n in link.counts.items():
            by_kind[kind] += n
    return Graph(
        panels=[p for p in panels if p.nodes or len(panels) == 1],
        total_rooms=found.total_rooms,
        shown_rooms=len(found.rooms),
        corridors=sum(1 for link in found.links if link.a != link.b),
        by_kind=by_kind,
    )


def _panel(found: RoomGraph, palace_id: int, label: str) -> Panel:
    rooms = sorted(
        (r for r in found.rooms if r.palace_id == palace_id), key=lambda r: (_KIND_ORDER.get(r.kind, 99), r.ordinal)
    )
    nodes = _circle(rooms)
    at = {node.id: node for node in nodes}
    links: list[Link] = []
    corridors: list[Corridor] = []
    for link in sorted(found.links, key=lambda k: -k.total):
        if link.a not in at or link.b not in at:
            continue
        a, b = at[link.a], at[link.b]
        kinds = [k for k in LINK_KINDS if link.counts.get(k)]
        for i, kind in enumerate(kinds):
            path = _loop(a, i) if a is b else _chord(a, b, i)
            links.append(Link(a=a.id, b=b.id, kind=kind, n=link.counts[kind], path=path))
        corridors.append(Corridor(a=a.name, b="" if a is b else b.name, counts=link.counts))
    return Panel(
        palace_id=palace_id,
        palace=label,
        nodes=nodes,
        links=links,
        corridors=corridors,
        labelled=len(nodes) <= LABELLED_ROOMS,
    )


def _circle(rooms: list[GraphRoom]) -> list[Node]:
    cx, cy = PANEL_WIDTH / 2, PANEL_HEIGHT / 2
    radius = min(PANEL_WIDTH, PANEL_HEIGHT) / 2 - 72  # room for the labels outside
    peak = max((r.memories for r in rooms), default=0) or 1
    nodes = []
    for i, room in enumerate(rooms):
        angle = -math.pi / 2 + 2 * math.pi * i / len(rooms)
        cos, sin = math.cos(angle), math.sin(angle)
        r = 5.0 if not room.memories else 7 + 13 * math.sqrt(room.memories / peak)
        x, y = cx + radius * cos, cy + radius * sin
        anchor = "start" if cos > 0.3 else "end" if cos < -0.3 else "middle"
        out = r + 6
        nodes.append(
            Node(
                id=room.id,
                name=room.name,
                kind=room.kind,
                memories=room.memories,
                x=round(x, 1),
                y=round(y, 1),
                r=round(r, 1),
                label_x=round(x + out * cos, 1),
                label_y=round(y + out * sin + (4 if anchor != "middle" else 10 if sin > 0 else -2), 1),
                anchor=anchor,
            )
        )
    return nodes


def _chord(a: Node, b: Node, i: int) -> str:
    """A quadratic curve from a to b whose control point lies between their midpoint and the centre (the i-th kind
    of corridor between the pair bends further)."""
    cx, cy = PANEL_WIDTH / 2, PANEL_HEIGHT / 2
    mx, my = (a.x + b.x) / 2, (a.y + b.y) / 2
    pull = min(0.25 + 0.22 * i, 0.9)
    qx, qy = mx + (cx - mx) * pull, my + (cy - my) * pull
    return f"M{a.x:.1f} {a.y:.1f} Q{qx:.1f} {qy:.1f} {b.x:.1f} {b.y:.1f}"


def _loop(a: Node, i: int) -> str:
    """A loop on the inner side of room a (towards the centre), for links between memories of the room."""
    cx, cy = PANEL_WIDTH / 2, PANEL_HEIGHT / 2
    angle = math.atan2(cy - a.y, cx - a.x)
    reach = a.r + 26 + 9 * i

    def point(turn: float, dist: float) -> tuple[float, float]:
        return a.x + dist * math.cos(angle + turn), a.y + dist * math.sin(angle + turn)

    (x1, y1), (x2, y2) = point(-0.5, a.r), point(0.5, a.r)
    (c1x, c1y), (c2x, c2y) = point(-0.9, reach), point(0.9, reach)
    return f"M{x1:.1f} {y1:.1f} C{c1x:.1f} {c1y:.1f} {c2x:.1f} {c2y:.1f} {x2:.1f} {y2:.1f}"
