"""Reads the panel pages need, always over palaces the caller's scope resolved through palace.selectors.

Lists use keyset pagination (an opaque cursor of the last row's sort key) so a page costs the same at row 100,000 as
at row 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db.models import Case, Count, DateField, F, Max, Min, Q, QuerySet, When
from django.db.models.functions import TruncDate
from django.utils import timezone

from memory.models import Edge, Memory
from palace.models import OpLog, Room, TourStop
from panel import labels

PAGE_SIZE = 50


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
    by_category: dict[str, int]

    @property
    def peak(self) -> int:
        return max((b.count for b in self.days), default=0)


def week_window(now: datetime) -> tuple[list[date], datetime]:
    """The last seven local days, oldest first, and the moment the first of them began."""
    today = timezone.localdate(now)
    days = [today - timedelta(days=6 - i) for i in range(7)]
    start = timezone.make_aware(datetime.combine(days[0], datetime.min.time()))
    return days, start


def bars(days: list[date], counts: dict[date, int], *, height: int = 28, width: int = 12, gap: int = 4) -> list[Bar]:
    """Geometry of a small server-rendered SVG bar chart (one bar per day, scaled to the busiest day)."""
    peak = max(counts.values(), default=0) or 1
    out = []
    for i, day in enumerate(days):
        count = counts.get(day, 0)
        h = round(height * count / peak) if count else 0
        out.append(Bar(day=day, count=count, x=i * (width + gap), y=height - h, height=h))
    return out


# --- the op log ------------------------------------------------------------------------------------------------


def category_filter(category: str) -> Q:
    """Ops of one Log category: the known ops in it plus unknown ops that its prefix rule claims."""
    known = list(labels.OPS)
    q = Q(op__in=labels.ops_in_category(category, known))
    unknown = ~Q(op__in=known)
    prefixes = {p for p, c in labels.PREFIX_CATEGORY.items() if c == category}
    if category == "writes":
        prefixes.add("memory")
    for prefix in prefixes:
        q |= unknown & Q(op__startswith=f"{prefix}.")
    if category == "organize":
        claimed = Q()
        for prefix in [*labels.PREFIX_CATEGORY, "memory"]:
            claimed |= Q(op__startswith=f"{prefix}.")
        q |= unknown & ~claimed
    return q


def oplog_rows(
    *, palace_ids: list[int], category: str = "", before: int | None = None, limit: int = PAGE_SIZE
) -> tuple[list[OpLog], int | None]:
    """One page of the op log, newest first; returns the rows and the cursor for the next page (or None)."""
    qs: QuerySet[OpLog] = OpLog.objects.filter(palace_id__in=palace_ids)
    if category in labels.CATEGORIES:
        qs = qs.filter(category_filter(category))
    if before is not None:
        qs = qs.filter(id__lt=before)
    rows = list(qs.order_by("-id")[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1].pk if more and rows else None)


def oplog_week(*, palace_ids: list[int], now: datetime) -> Week:
    days, start = week_window(now)
    grouped = (
        OpLog.objects.filter(palace_id__in=palace_ids, created_at__gte=start)
        .annotate(day=TruncDate("created_at"))
        .values("day", "op")
        .annotate(n=Count("id"))
    )
    per_day: dict[date, int] = {}
    by_category = dict.fromkeys(labels.CATEGORIES, 0)
    for row in grouped:
        per_day[row["day"]] = per_day.get(row["day"], 0) + row["n"]
        by_category[labels.op_category(row["op"])] += row["n"]
    return Week(days=bars(days, per_day), total=sum(per_day.values()), by_category=by_category)


def oplog_row(*, palace_ids: list[int], oplog_id: int) -> OpLog | None:
    return OpLog.objects.filter(palace_id__in=palace_ids, pk=oplog_id).first()


def int_or_none(raw: Any) -> int | None:
    try:
        return int(raw) if raw not in (None, "") else None
    except (TypeError, ValueError):
        return None


# --- memories --------------------------------------------------------------------------------------------------

STATUSES = ("active", "archived", "forgotten", "superseded", "all")
SORTS = ("new", "route")
# The list never needs the heavy columns (a 384-float vector, the derived search texts).
HEAVY = ("embedding", "search_vector", "search_text", "sources", "meta")


def memory_base(*, palace_ids: list[int]) -> QuerySet[Memory]:
    return Memory.objects.filter(palace_id__in=palace_ids).select_related("slot__room").defer(*HEAVY)


def memory_rows(
    *,
    palace_ids: list[int],
    status: str = "active",
    kind: str = "",
    room_id: int | None = None,
    only_ids: list[int] | None = None,
    sort: str = "new",
    cursor: str = "",
    limit: int = PAGE_SIZE,
) -> tuple[list[Memory], str]:
    """One page of memories, newest first or in tour-route order; returns rows and the next cursor ("" at end)."""
    qs = memory_base(palace_ids=palace_ids)
    if status != "all":
        qs = qs.filter(status=status)
    if kind in labels.KINDS:
        qs = qs.filter(kind=kind)
    if room_id is not None:
        qs = qs.filter(slot__room_id=room_id)
    if only_ids is not None:
        qs = qs.filter(pk__in=only_ids)
    if sort == "route":
        # Walk the route index (tour stop: palace, seq) rather than sorting every memory; unplaced memories are
        # not on the route.
        routed = qs.filter(slot__tour_stop__isnull=False).annotate(
            route_palace=F("slot__tour_stop__palace_id"), seq=F("slot__tour_stop__seq")
        )
        after = _split(cursor, 3)
        if after:
            pal, seq, pk = after
            routed = routed.filter(
                Q(route_palace__gt=pal) | Q(route_palace=pal, seq__gt=seq) | Q(route_palace=pal, seq=seq, pk__gt=pk)
            )
        rows: list[Memory] = list(routed.order_by("route_palace", "seq", "id")[: limit + 1])
        last = rows[limit - 1] if len(rows) > limit else None
        nxt = f"{last.palace_id}.{getattr(last, 'seq', 0)}.{last.pk}" if last is not None else ""
        return rows[:limit], nxt
    after = _split(cursor, 2)
    if after:
        stamp, pk = after
        moment = datetime.fromtimestamp(stamp / 1_000_000, tz=UTC)
        qs = qs.filter(Q(created_at__lt=moment) | Q(created_at=moment, pk__lt=pk))
    rows = list(qs.order_by("-created_at", "-id")[: limit + 1])
    if len(rows) <= limit:
        return rows, ""
    last = rows[limit - 1]
    return rows[:limit], f"{_micros(last.created_at)}.{last.pk}"


def _micros(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000 + moment.microsecond


def _split(cursor: str, parts: int) -> list[int] | None:
    try:
        values = [int(p) for p in cursor.split(".")]
    except ValueError:
        return None
    return values if len(values) == parts else None


def supersede_chain(memory: Memory, *, depth: int = 20) -> tuple[list[Memory], list[Memory]]:
    """The versions this memory replaced (newest first) and those that replaced it (oldest first)."""
    older: list[Memory] = []
    current = memory
    while current.supersedes_id is not None and len(older) < depth:
        found = memory_base(palace_ids=[memory.palace_id]).filter(pk=current.supersedes_id).first()
        if found is None:
            break
        older.append(found)
        current = found
    newer: list[Memory] = []
    current = memory
    while len(newer) < depth:
        found = memory_base(palace_ids=[memory.palace_id]).filter(supersedes_id=current.pk).order_by("pk").first()
        if found is None:
            break
        newer.append(found)
        current = found
    return older, newer


def memory_edges(memory: Memory, *, limit: int = 20) -> list[Edge]:
    both = Q(from_memory_id=memory.pk) | Q(to_memory_id=memory.pk)
    rows = Edge.objects.filter(both, palace_id=memory.palace_id).select_related("from_memory", "to_memory")
    return list(rows.order_by("-created_at")[:limit])


def room_in(*, palace_ids: list[int], room_id: int) -> Room | None:
    return Room.objects.filter(palace_id__in=palace_ids, pk=room_id).first()


# --- episodes --------------------------------------------------------------------------------------------------

EPISODE_STATUSES = ("active", "archived")


@dataclass
class EpisodeGroup:
    palace_id: int
    session: str
    first: datetime
    last: datetime
    count: int
    entries: list[Memory]


def episode_groups(
    *,
    palace_ids: list[int],
    start: date | None = None,
    end: date | None = None,
    cursor: str = "",
    groups: int = 10,
    per_group: int = 40,
) -> tuple[list[EpisodeGroup], str]:
    """Episodes grouped by source session, newest group first, entries in order inside each group."""
    qs = Memory.objects.filter(palace_id__in=palace_ids, kind="episode", status__in=EPISODE_STATUSES)
    if start is not None:
        qs = qs.filter(occurred_at__gte=_day_start(start))
    if end is not None:
        qs = qs.filter(occurred_at__lt=_day_start(end + timedelta(days=1)))
    heads = qs.values("palace_id", "source_session").annotate(
        last=Max("occurred_at"), first=Min("occurred_at"), n=Count("id")
    )
    after = _split(cursor, 1)
    if after:
        heads = heads.filter(last__lt=datetime.fromtimestamp(after[0] / 1_000_000, tz=UTC))
    picked = list(heads.order_by("-last", "palace_id", "source_session")[: groups + 1])
    more = len(picked) > groups
    picked = picked[:groups]
    if not picked:
        return [], ""
    which = Q()
    for head in picked:
        which |= Q(palace_id=head["palace_id"], source_session=head["source_session"])
    entries: dict[tuple[int, str], list[Memory]] = {}
    rows = qs.filter(which).select_related("slot__room").defer(*HEAVY).order_by("occurred_at", "source_seq", "id")
    for memory in rows[: groups * per_group * 2]:
        bucket = entries.setdefault((memory.palace_id, memory.source_session), [])
        if len(bucket) < per_group:
            bucket.append(memory)
    out = [
        EpisodeGroup(
            palace_id=h["palace_id"],
            session=h["source_session"],
            first=h["first"],
            last=h["last"],
            count=h["n"],
            entries=entries.get((h["palace_id"], h["source_session"]), []),
        )
        for h in picked
    ]
    return out, (str(_micros(picked[-1]["last"])) if more else "")


def episodes_nearby(*, anchor: Memory, minutes: int, limit: int = 60) -> list[Memory]:
    """Episodes in the anchor's palace within ± `minutes` of its moment, in time order."""
    window = timedelta(minutes=minutes)
    qs = memory_base(palace_ids=[anchor.palace_id]).filter(
        kind="episode",
        status__in=EPISODE_STATUSES,
        occurred_at__gte=anchor.occurred_at - window,
        occurred_at__lte=anchor.occurred_at + window,
    )
    return list(qs.order_by("occurred_at", "source_seq", "id")[:limit])


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, datetime.min.time()))


# --- today -----------------------------------------------------------------------------------------------------


@dataclass
class Summary:
    memories: int
    open: int  # contradictions waiting for a decision
    week: Week
    by_kind: dict[str, int]


def today_summary(*, palace_ids: list[int], now: datetime) -> Summary:
    """Active memories per kind and new memories per day of the last week from one pass over the memories
    (grouped by kind, status and the creation day within the week), and the open contradictions."""
    days, start = week_window(now)
    recent = Case(When(created_at__gte=start, then=TruncDate("created_at")), default=None, output_field=DateField())
    grouped = (
        Memory.objects.filter(palace_id__in=palace_ids)
        .annotate(day=recent)
        .values_list("kind", "status", "day")
        .annotate(n=Count("id"))
        .order_by()
    )
    by_kind = dict.fromkeys(labels.KINDS, 0)
    per_day: dict[date, int] = {}
    for kind, status, day, n in grouped:
        if status == "active":
            by_kind[kind] = by_kind.get(kind, 0) + n
        if day is not None:
            per_day[day] = per_day.get(day, 0) + n
    pending = Edge.objects.filter(palace_id__in=palace_ids, kind="contradicts", status="pending").count()
    week = Week(days=bars(days, per_day), total=sum(per_day.values()), by_category={})
    return Summary(memories=sum(by_kind.values()), open=pending, week=week, by_kind=by_kind)


# --- corridor --------------------------------------------------------------------------------------------------

GRAPH_MAX_ROOMS = 240


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


def corridor_graph(*, palace_ids: list[int], limit: int = GRAPH_MAX_ROOMS) -> Graph:
    """Rooms as nodes (newest `limit` when there are more), edges between their memories as weighted links, laid
    out in kind sectors so the picture makes sense before (or without) the browser's force layout."""
    rooms_qs = Room.objects.filter(palace_id__in=palace_ids)
    total = rooms_qs.count()
    rooms = list(rooms_qs.annotate(n=Count("slots")).order_by("-id")[:limit])
    ids = {r.pk for r in rooms}
    pairs = (
        Edge.objects.filter(palace_id__in=palace_ids)
        .exclude(status="dismissed")
        .values("from_memory__slot__room_id", "to_memory__slot__room_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    weights: dict[tuple[int, int], int] = {}
    inner = 0
    for row in pairs:
        a, b = row["from_memory__slot__room_id"], row["to_memory__slot__room_id"]
        if a is None or b is None:
            continue
        if a == b:
            inner += row["n"]
            continue
        if a in ids and b in ids:
            key = (min(a, b), max(a, b))
            weights[key] = weights.get(key, 0) + row["n"]
    graph = Graph(
        nodes=_layout(rooms),
        links=[Link(a=a, b=b, n=n) for (a, b), n in weights.items()],
        total_rooms=total,
        inner_edges=inner,
    )
    at = {node.id: node for node in graph.nodes}
    for link in graph.links:
        link.x1, link.y1, link.x2, link.y2 = at[link.a].x, at[link.a].y, at[link.b].x, at[link.b].y
    return graph


def _layout(rooms: Sequence[Room], width: int = 640, height: int = 420) -> list[Node]:
    by_kind: dict[str, list[Room]] = {}
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
                    id=room.pk,
                    name=room.name,
                    kind=kind,
                    slots=room.n,  # type: ignore[attr-defined]
                    x=round(width / 2 + radius * math.cos(angle), 1),
                    y=round(height / 2 + radius * math.sin(angle), 1),
                    r=round(7 + min(room.n, 9) * 0.9, 1),  # type: ignore[attr-defined]
                )
            )
    return nodes


def room_memories(*, room: Room, limit: int = 30) -> list[Memory]:
    qs = memory_base(palace_ids=[room.palace_id]).filter(slot__room=room).exclude(status="forgotten")
    return list(qs.order_by("slot__number", "-id")[:limit])


@dataclass
class Stretch:
    """Today's stretch of the fixed tour route: a few consecutive active stops, a different stretch each day so
    the whole palace is walked over time. `first`/`last` are route positions (tour-stop numbers), `total` the
    stops on the route."""

    palace_id: int
    stops: Sequence[Memory]  # each with `seq`, its position on the route
    total: int

    @property
    def first(self) -> int:
        return getattr(self.stops[0], "seq", 0) if self.stops else 0

    @property
    def last(self) -> int:
        return getattr(self.stops[-1], "seq", 0) if self.stops else 0


def tour_stretch(*, palace_id: int, today: date, length: int = 7) -> Stretch:
    """Walk the route index from today's starting stop: a count of the route's stops and two bounded reads,
    whatever the size of the palace. Stops whose slot holds no active memory are skipped; near the end of the
    route the stretch ends at the last active stops."""
    total = TourStop.objects.filter(palace_id=palace_id).count()
    if total == 0:
        return Stretch(palace_id=palace_id, stops=[], total=0)
    start = (today.toordinal() * length) % (total - length + 1) + 1 if total > length else 1
    active = (
        memory_base(palace_ids=[palace_id])
        .filter(status="active", slot__tour_stop__palace_id=palace_id)
        .annotate(seq=F("slot__tour_stop__seq"))
    )
    stops = list(active.filter(seq__gte=start).order_by("seq", "id")[:length])
    if len(stops) < length and start > 1:
        stops = list(reversed(active.order_by("-seq", "-id")[:length]))
    return Stretch(palace_id=palace_id, stops=stops, total=total)


def last_op_id(*, palace_id: int, ignoring: Sequence[str] = ()) -> int:
    """The newest op row of a palace: a version number for everything derived from its contents. `ignoring`
    leaves out ops by prefix (e.g. "review.") for a figure those ops cannot change."""
    qs = OpLog.objects.filter(palace_id=palace_id)
    for prefix in ignoring:
        qs = qs.exclude(op__startswith=prefix)
    return qs.order_by("-id").values_list("id", flat=True).first() or 0
