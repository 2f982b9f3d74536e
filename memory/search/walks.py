"""Walks: from one memory over its edges (neighbours, 1–3 hops), and along the palace's fixed tour route.

- Neighbours: memories 1–3 hops from one memory over its edges (both directions), nearest first.
- Fixed tour: the whole palace in tour-route (slot) order, one stop per slot showing what the slot holds now.
- Today's stretch: a few consecutive stops of the fixed tour, a different stretch each day.
- Thematic tour: 3–7 stops around a theme: search the palace, then walk the hits in route order.

What counts as a stop (one rule for every door): a walk stops at the route positions whose slot holds an active
memory; a closed slot (all its memories forgotten, archived or superseded — the closed wing) is on the route but
not a stop unless `include_closed`. `Tour.total` is the number of stops of the walk. A stop is named by its route
position `seq`, which never changes (slots are never recycled), so positions can exceed `total` when slots closed.

The room directory and the rooms-and-corridors graph are in memory/selectors/rooms.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

from django.db.models import Case, Count, Exists, F, IntegerField, OuterRef, QuerySet, Subquery, Value, When

from memory.models import Edge, Memory
from memory.selectors import HEAVY
from palace.errors import InvalidInput
from palace.models import Palace, Slot, TourStop
from palace.structure import tour_route

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

MAX_HOPS = 3
NEIGHBOUR_LIMIT = 50
TOUR_MIN_STOPS = 3
TOUR_MAX_STOPS = 7
TOUR_PAGE_MAX = 500
STRETCH_STOPS = 7  # today's stretch of the route (the panel's Today)


# --- neighbours ----------------------------------------------------------------------------------------------------


@dataclass
class EdgeNeighbour:
    memory: Memory
    hops: int
    via: str  # the edge kind that reached it, e.g. "supports"
    direction: str  # "out" (from the previous memory to this one) or "in"
    from_id: int


def edge_neighbours(*, memory: Memory, hops: int = 1, limit: int = NEIGHBOUR_LIMIT) -> list[EdgeNeighbour]:
    """Memories within `hops` (1–3) edges of `memory`, breadth first, nearest first, forgotten ones left out.

    Dismissed contradiction edges are not relations and are not walked.
    """
    if not 1 <= hops <= MAX_HOPS:
        raise InvalidInput(f"hops must be 1 to {MAX_HOPS}", field="hops")
    if not 1 <= limit <= 200:
        raise InvalidInput("limit must be 1 to 200", field="limit")
    seen: dict[int, tuple[int, str, str, int]] = {}
    frontier = {int(memory.pk)}
    visited = {int(memory.pk)}
    for depth in range(1, hops + 1):
        if not frontier:
            break
        edges = (
            Edge.objects.filter(palace_id=memory.palace_id)
            .exclude(status=Edge.Status.DISMISSED)
            .filter(from_memory_id__in=frontier)
            .values_list("from_memory_id", "to_memory_id", "kind")
            .union(
                Edge.objects.filter(palace_id=memory.palace_id)
                .exclude(status=Edge.Status.DISMISSED)
                .filter(to_memory_id__in=frontier)
                .values_list("from_memory_id", "to_memory_id", "kind")
            )
        )
        nxt: set[int] = set()
        for src, dst, kind in sorted(edges):
            for here, there, direction in ((src, dst, "out"), (dst, src, "in")):
                if here in frontier and there not in visited:
                    visited.add(there)
                    nxt.add(there)
                    seen[there] = (depth, kind, direction, here)
        frontier = nxt
    rows = Memory.objects.filter(pk__in=seen, palace_id=memory.palace_id).exclude(status=Memory.Status.FORGOTTEN)
    found = {m.pk: m for m in rows.select_related("slot__room")}
    ordered = sorted((pk for pk in seen if pk in found), key=lambda pk: (seen[pk][0], pk))[:limit]
    return [
        EdgeNeighbour(memory=found[pk], hops=seen[pk][0], via=seen[pk][1], direction=seen[pk][2], from_id=seen[pk][3])
        for pk in ordered
    ]


# --- tours ---------------------------------------------------------------------------------------------------------


@dataclass
class TourStopView:
    seq: int
    coordinate: str
    slot_id: int
    memory: Memory | None  # what the slot holds now: its active memory, else its latest one


@dataclass
class Tour:
    mode: str  # "fixed" | "thematic"
    stops: list[TourStopView]
    total: int  # fixed: stops on the route (after the status filter); thematic: stops planned
    theme: str = ""
    search_mode: str = ""  # thematic: what the search ran ("hybrid", "lexical", …)
    degraded: list[str] = field(default_factory=list)
    note: str = ""


def current_by_slot(slot_ids: list[int]) -> dict[int, Memory]:
    """For each slot, the memory it holds now: the active one, else the most recent of its chain."""
    rank = Case(When(status=Memory.Status.ACTIVE, then=Value(0)), default=Value(1), output_field=IntegerField())
    rows = (
        Memory.objects.filter(slot_id__in=slot_ids)
        .annotate(status_rank=rank)
        .order_by("slot_id", "status_rank", "-pk")
        .distinct("slot_id")
        .select_related("slot__room")
    )
    return {m.slot_id: m for m in rows if m.slot_id is not None}


def _holds_active() -> Exists:
    """For a route position (a TourStop row): whether its slot holds an active memory, i.e. whether it is a stop."""
    return Exists(Memory.objects.filter(slot_id=OuterRef("slot_id"), status=Memory.Status.ACTIVE))


def open_stops(route: QuerySet[TourStop]) -> QuerySet[TourStop]:
    """The stops of a walk among route positions: those whose slot holds an active memory."""
    return route.filter(_holds_active())


def _stops_counted(palace: OuterRef | Palace) -> QuerySet[Any, Any]:
    """How many stops a palace's walk has, as a one-value query: the distinct slots holding an active memory.

    Counted from the memories' side: slot_assign appends every slot to the route in the transaction that opens it,
    so this equals the route positions `open_stops` keeps, and it reads the active memories (the covering index
    `memory_active_placards`) instead of probing every route position for one (4 ms instead of 15 at 10,000)."""
    return (
        Memory.objects.filter(palace=palace, status=Memory.Status.ACTIVE, slot__isnull=False)
        .order_by()
        .values("palace")
        .annotate(n=Count("slot", distinct=True))
        .values("n")
    )


def _route_figures(palace: Palace) -> tuple[int, int]:
    """(route positions, stops) of a palace in one read."""
    route = TourStop.objects.filter(palace=OuterRef("pk")).order_by().values("palace").annotate(n=Count("pk"))
    row = (
        Palace.objects.filter(pk=palace.pk)
        .annotate(route=Subquery(route.values("n")), stops=Subquery(_stops_counted(OuterRef("pk"))))
        .values_list("route", "stops")
        .first()
    )
    return (row[0] or 0, row[1] or 0) if row is not None else (0, 0)


def tour_fixed(*, palace: Palace, include_closed: bool = False, offset: int = 0, limit: int = 100) -> Tour:
    """Walk the whole palace in slot order. Stops whose slot holds no active memory (the closed wing) are left
    out unless `include_closed`. Only the asked page of the route is loaded (the total is a count), so a page
    costs the same in a palace of 100 memories as in one of 100,000."""
    if offset < 0 or not 1 <= limit <= TOUR_PAGE_MAX:
        raise InvalidInput(f"offset must be >= 0 and limit 1 to {TOUR_PAGE_MAX}", field="limit")
    route = tour_route(palace=palace)
    if include_closed:
        total = route.count()
    else:
        route = open_stops(route)
        total = next(iter(_stops_counted(palace).values_list("n", flat=True)), 0)
    page = list(route[offset : offset + limit]) if offset < total else []
    current = current_by_slot([s.slot_id for s in page])
    stops = [
        TourStopView(seq=s.seq, coordinate=s.slot.coordinate, slot_id=s.slot_id, memory=current.get(s.slot_id))
        for s in page
    ]
    return Tour(mode="fixed", stops=stops, total=total)


@dataclass
class Stretch(Tour):
    """Today's stretch of the fixed tour: `stops` are consecutive stops of the walk (`total` of them, by the same
    rule as tour_fixed); `first` and `last` are route positions out of `route_length` (closed slots included)."""

    route_length: int = 0

    @property
    def first(self) -> int:
        return self.stops[0].seq if self.stops else 0

    @property
    def last(self) -> int:
        return self.stops[-1].seq if self.stops else 0


def tour_stretch(*, palace: Palace, today: date, length: int = STRETCH_STOPS) -> Stretch:
    """`length` consecutive stops of the fixed tour from a route position that moves with the day, so the whole
    palace is walked over time. One read of the route's length and its stops, and one bounded read from the
    starting position along the route index, whatever the size of the palace; near the end of the route the
    stretch is the last `length` stops (one more bounded read)."""
    route, total = _route_figures(palace)
    if total == 0:
        return Stretch(mode="fixed", stops=[], total=0, route_length=route)
    start = (today.toordinal() * length) % (route - length + 1) + 1 if route > length else 1
    active = (
        Memory.objects.filter(palace=palace, status=Memory.Status.ACTIVE, slot__tour_stop__palace=palace)
        .select_related("slot__room")
        .defer(*HEAVY)
        .annotate(seq=F("slot__tour_stop__seq"))
    )
    found = list(active.filter(seq__gte=start).order_by("seq", "id")[:length])
    if len(found) < length and start > 1:
        found = list(reversed(active.order_by("-seq", "-id")[:length]))
    stops = [
        TourStopView(
            seq=int(getattr(m, "seq", 0)),  # annotated above: the route position
            coordinate=m.slot.coordinate if m.slot is not None else "",
            slot_id=m.slot_id or 0,
            memory=m,
        )
        for m in found
    ]
    return Stretch(mode="fixed", stops=stops, total=total, route_length=route)


def tour_thematic(
    *,
    user: AbstractBaseUser | AnonymousUser | None,
    palace: Palace,
    theme: str,
    stops: int = 5,
) -> Tour:
    """Plan `stops` (3–7) stops around `theme`: search the palace, keep the best hits (one per slot), then order
    them by the tour route so the walk is always in the same direction."""
    from memory.search.results import SearchRequest
    from memory.search.search import memory_search

    if not TOUR_MIN_STOPS <= stops <= TOUR_MAX_STOPS:
        raise InvalidInput(f"a thematic tour has {TOUR_MIN_STOPS} to {TOUR_MAX_STOPS} stops", field="stops")
    theme = " ".join(str(theme).split())
    if not theme:
        raise InvalidInput("a thematic tour needs a theme", field="theme")
    result = memory_search(
        user=user,
        request=SearchRequest(query=theme, palace_ids=[palace.pk], limit=stops * 2),
        reinforce=False,
        register_batch=False,
    )
    picked: list[Memory] = []
    slots: set[int | None] = set()
    for hit in result.hits:
        if hit.memory.slot_id in slots and hit.memory.slot_id is not None:
            continue
        slots.add(hit.memory.slot_id)
        picked.append(hit.memory)
        if len(picked) == stops:
            break
    seq_of: dict[int | None, int] = dict(
        Slot.objects.filter(pk__in=[m.slot_id for m in picked if m.slot_id]).values_list("pk", "tour_stop__seq")
    )
    picked.sort(key=lambda m: (seq_of.get(m.slot_id) is None, seq_of.get(m.slot_id) or 0, m.pk))
    views = [
        TourStopView(
            seq=seq_of.get(m.slot_id) or 0,
            coordinate=m.slot.coordinate if m.slot is not None else "",
            slot_id=m.slot_id or 0,
            memory=m,
        )
        for m in picked
    ]
    note = ""
    if len(views) < TOUR_MIN_STOPS:
        note = (
            f"only {len(views)} memories match this theme; a thematic tour wants {TOUR_MIN_STOPS} to {TOUR_MAX_STOPS}"
        )
    return Tour(
        mode="thematic",
        stops=views,
        total=len(views),
        theme=theme,
        search_mode=result.mode,
        degraded=list(result.degraded),
        note=note,
    )
