"""Rooms: the room directory of a palace (every room with the slots it has used, its active memories and its latest
placard: pick the room, then search inside it with ``memory_search(room=...)``), and its bounded forms for large
palaces (the newest rooms of each kind, a page of one kind's rooms). The rooms-and-corridors graph is in graph.py.

Walks from a memory and tours of the route are in memory/search/walks.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, F, Window
from django.db.models.functions import RowNumber

from memory.models import Memory
from palace.models import Palace, Room, Slot
from palace.slots import KIND_ORDER


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
