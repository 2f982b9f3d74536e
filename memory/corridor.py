"""The corridor: the room directory, walks over edges from one memory, and tours of the palace.

- Room directory: every room with the slots it has used and its latest placard (pick the room, then search inside
  it with ``memory_search(room=...)``); bounded forms for large palaces (the newest rooms of each kind, a page of
  one kind's rooms).
- Neighbours: memories 1–3 hops from one memory over its edges (both directions), nearest first.
- Fixed tour: the whole palace in tour-route (slot) order, one stop per slot showing what the slot holds now.
- Thematic tour: 3–7 stops around a theme: search the palace, then walk the hits in route order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from django.db.models import Case, Count, Exists, F, IntegerField, OuterRef, Value, When, Window
from django.db.models.functions import RowNumber

from memory.models import Edge, Memory
from palace.errors import InvalidInput
from palace.models import Palace, Room, Slot
from palace.slots import KIND_ORDER
from palace.structure import tour_route

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

MAX_HOPS = 3
NEIGHBOUR_LIMIT = 50
TOUR_MIN_STOPS = 3
TOUR_MAX_STOPS = 7
TOUR_PAGE_MAX = 500


@dataclass
class RoomEntry:
    id: int
    name: str
    kind: str
    ordinal: int
    capacity: int
    slots_used: int
    active: int
    latest_placard: str


def room_directory(*, palace: Palace) -> list[RoomEntry]:
    """Every room of the palace in directory order, with slots used, active memories and the latest placard.

    Three grouped reads over the palace (rooms with their slot counts, active memories per room, the newest
    placard per room), not two subqueries per room: a palace of 10,000 memories has over a thousand rooms.
    """
    active = Memory.objects.filter(palace=palace, status=Memory.Status.ACTIVE, slot__isnull=False)
    counts = dict(active.order_by().values("slot__room_id").annotate(n=Count("pk")).values_list("slot__room_id", "n"))
    latest = dict(
        active.exclude(placard="")
        .order_by("slot__room_id", "-created_at", "-pk")
        .distinct("slot__room_id")
        .values_list("slot__room_id", "placard")
    )
    # Rows as values, not Room instances (a thousand of them); the order is rooms_of's directory order.
    rooms = (
        Room.objects.filter(palace=palace)
        .order_by()
        .values("id", "name", "kind", "ordinal", "capacity")
        .annotate(slots_used=Count("slots"))
    )
    return [
        RoomEntry(
            **room,
            active=counts.get(room["id"], 0),
            latest_placard=latest.get(room["id"], ""),
        )
        for room in sorted(rooms, key=lambda r: (KIND_ORDER.get(r["kind"], 99), r["ordinal"]))
    ]


ROOMS_PER_KIND = 3  # the newest rooms of each kind in a bounded directory (Today)
ROOM_PAGE = 60


@dataclass
class KindRooms:
    """One kind's rooms in a bounded directory: how many there are, the active memories they hold, and the newest
    few rooms (new memories land in the newest room of their kind; slots are never freed)."""

    kind: str
    rooms: int
    memories: int
    newest: list[RoomEntry]


def room_directory_head(*, palace: Palace, per_kind: int = ROOMS_PER_KIND) -> list[KindRooms]:
    """The room directory bounded whatever the size of the palace: per kind the room count, the active memories
    and the newest `per_kind` rooms. Three reads (the ranked rooms, active memories per kind, `_entries`)."""
    ranked = (
        Room.objects.filter(palace=palace)
        .annotate(
            rank=Window(RowNumber(), partition_by=F("kind"), order_by=F("ordinal").desc()),
            of_kind=Window(Count("id"), partition_by=F("kind")),
        )
        .filter(rank__lte=per_kind)
        .values_list("id", "name", "kind", "ordinal", "capacity", "of_kind")
    )
    rooms: dict[str, int] = {}
    newest: list[_Room] = []
    for room_id, name, kind, ordinal, capacity, of_kind in ranked:
        rooms[kind] = of_kind
        newest.append((room_id, name, kind, ordinal, capacity))
    active = Memory.objects.filter(palace=palace, status=Memory.Status.ACTIVE)
    memories = dict(active.values_list("kind").annotate(Count("id")).order_by())
    entries = sorted(_entries(newest), key=lambda e: -e.ordinal)
    return [
        KindRooms(
            kind=kind, rooms=rooms[kind], memories=memories.get(kind, 0), newest=[e for e in entries if e.kind == kind]
        )
        for kind in sorted(rooms, key=lambda k: KIND_ORDER.get(k, 99))
    ]


def room_directory_page(
    *, palace: Palace, kind: str, after: int | None = None, limit: int | None = None
) -> tuple[list[RoomEntry], int | None]:
    """One page (ROOM_PAGE rooms unless `limit`) of a kind's rooms in directory order (by ordinal), keyset-paged:
    the entries and the next cursor."""
    limit = limit or ROOM_PAGE
    rooms = Room.objects.filter(palace=palace, kind=kind)
    if after is not None:
        rooms = rooms.filter(ordinal__gt=after)
    found = list(rooms.order_by("ordinal").values_list("id", "name", "kind", "ordinal", "capacity")[: limit + 1])
    more = len(found) > limit
    entries = _entries(found[:limit])
    return entries, (entries[-1].ordinal if more and entries else None)


_Room = tuple[int, str, str, int, int]  # id, name, kind, ordinal, capacity


def _entries(rooms: list[_Room]) -> list[RoomEntry]:
    """`room_directory`'s figures for a few rooms only (id, name, kind, ordinal, capacity given), in their order:
    one read of their slots and the memories in them (a slot can hold a memory and the corrections that
    superseded it)."""
    used: dict[int, set[int]] = {}
    active: dict[int, int] = {}
    latest: dict[int, tuple[datetime, int, str]] = {}
    slots = Slot.objects.filter(room_id__in=[room[0] for room in rooms]).values_list(
        "room_id", "id", "memories__id", "memories__status", "memories__placard", "memories__created_at"
    )
    for room_id, slot_id, memory_id, status, placard, created in slots:
        used.setdefault(room_id, set()).add(slot_id)
        if status != Memory.Status.ACTIVE:
            continue
        active[room_id] = active.get(room_id, 0) + 1
        if placard and (room_id not in latest or (created, memory_id) > latest[room_id][:2]):
            latest[room_id] = (created, memory_id, placard)
    return [
        RoomEntry(
            id=room_id,
            name=name,
            kind=kind,
            ordinal=ordinal,
            capacity=capacity,
            slots_used=len(used.get(room_id, ())),
            active=active.get(room_id, 0),
            latest_placard=latest[room_id][2] if room_id in latest else "",
        )
        for room_id, name, kind, ordinal, capacity in rooms
    ]


# --- neighbours ----------------------------------------------------------------------------------------------------


@dataclass
class Neighbour:
    memory: Memory
    hops: int
    via: str  # the edge kind that reached it, e.g. "supports"
    direction: str  # "out" (from the previous memory to this one) or "in"
    from_id: int


def neighbours(*, memory: Memory, hops: int = 1, limit: int = NEIGHBOUR_LIMIT) -> list[Neighbour]:
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
        Neighbour(memory=found[pk], hops=seen[pk][0], via=seen[pk][1], direction=seen[pk][2], from_id=seen[pk][3])
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


def tour_fixed(*, palace: Palace, include_closed: bool = False, offset: int = 0, limit: int = 100) -> Tour:
    """Walk the whole palace in slot order. Stops whose slot holds no active memory (the closed wing) are left
    out unless `include_closed`. Only the asked page of the route is loaded (the total is a count), so a page
    costs the same in a palace of 100 memories as in one of 100,000."""
    if offset < 0 or not 1 <= limit <= TOUR_PAGE_MAX:
        raise InvalidInput(f"offset must be >= 0 and limit 1 to {TOUR_PAGE_MAX}", field="limit")
    route = tour_route(palace=palace)
    if not include_closed:
        open_slot = Memory.objects.filter(slot_id=OuterRef("slot_id"), status=Memory.Status.ACTIVE)
        route = route.filter(Exists(open_slot))
    total = route.count()
    page = list(route[offset : offset + limit]) if offset < total else []
    current = current_by_slot([s.slot_id for s in page])
    stops = [
        TourStopView(seq=s.seq, coordinate=s.slot.coordinate, slot_id=s.slot_id, memory=current.get(s.slot_id))
        for s in page
    ]
    return Tour(mode="fixed", stops=stops, total=total)


def tour_thematic(
    *,
    user: AbstractBaseUser | AnonymousUser | None,
    palace: Palace,
    theme: str,
    stops: int = 5,
) -> Tour:
    """Plan `stops` (3–7) stops around `theme`: search the palace, keep the best hits (one per slot), then order
    them by the tour route so the walk is always in the same direction."""
    from memory.search import memory_search

    if not TOUR_MIN_STOPS <= stops <= TOUR_MAX_STOPS:
        raise InvalidInput(f"a thematic tour has {TOUR_MIN_STOPS} to {TOUR_MAX_STOPS} stops", field="stops")
    theme = " ".join(str(theme).split())
    if not theme:
        raise InvalidInput("a thematic tour needs a theme", field="theme")
    result = memory_search(
        user=user,
        query=theme,
        palace_ids=[palace.pk],
        limit=stops * 2,
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
