"""The rooms-and-corridors graph: which rooms of the given palaces the links between their memories connect, by kind
of link (a correction superseding, an open or decided contradiction, the next turn of a session, another edge, an
entity both rooms' memories mention), and each room's active memories. Read by the panel's Corridor page.

Every read is bounded whatever the size of the palaces: the newest GRAPH_MAX_ROOMS rooms, edges grouped by the
rooms of their two memories in the database, entity co-mentions paired in the database from one (room, entity) row
per distinct pair. The caller passes the palaces the user may read (the scope); row-level security holds as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import Count, Q

from memory.models import Edge, Memory, MemoryEntity
from palace.models import Room, Slot

GRAPH_MAX_ROOMS = 240
# The kinds of corridor, in legend order. An Edge kind maps onto the first three; the other edge kinds (supports,
# refines, related, derived_from) are "related"; "entity" is counted from shared entity mentions, not from edges.
LINK_KINDS = ("supersede", "contradiction", "next", "related", "entity")
EDGE_LINK_KIND = {Edge.Kind.SUPERSEDES: "supersede", Edge.Kind.CONTRADICTS: "contradiction", Edge.Kind.NEXT: "next"}


@dataclass
class GraphRoom:
    id: int
    palace_id: int
    name: str
    kind: str
    ordinal: int
    slots: int
    memories: int = 0  # active memories


@dataclass
class RoomLink:
    """Between rooms `a` and `b` (a < b; a == b for links between memories of one room): counts by LINK_KINDS
    (edges, or for "entity" the entities both rooms mention)."""

    a: int
    b: int
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class RoomGraph:
    """Rooms (the newest `limit` when there are more) and the links between them."""

    rooms: list[GraphRoom]
    links: list[RoomLink]
    total_rooms: int

    @property
    def inner_edges(self) -> int:
        return sum(link.total for link in self.links if link.a == link.b)


def room_graph(*, palace_ids: Sequence[int], limit: int = GRAPH_MAX_ROOMS) -> RoomGraph:
    """Five reads: the room count, the newest rooms with their slot counts, active memories per room, edges grouped
    by room pair and kind, entity co-mentions grouped by room pair."""
    rooms_qs = Room.objects.filter(palace_id__in=palace_ids)
    total = rooms_qs.count()
    newest = rooms_qs.annotate(n=Count("slots")).order_by("-id")
    rooms = [
        GraphRoom(id=pk, palace_id=palace_id, name=name, kind=kind, ordinal=ordinal, slots=n)
        for pk, palace_id, name, kind, ordinal, n in newest.values_list(
            "id", "palace_id", "name", "kind", "ordinal", "n"
        )[:limit]
    ]
    ids = [r.id for r in rooms]
    counts = _active_per_room(palace_ids=palace_ids, room_ids=ids)
    for room in rooms:
        room.memories = counts.get(room.id, 0)
    links = _links(palace_ids=palace_ids, room_ids=ids)
    return RoomGraph(rooms=rooms, links=links, total_rooms=total)


@dataclass
class RoomCorridor:
    """A corridor from one room: the room at the other end (None for links inside the room) and the counts."""

    other: GraphRoom | None
    counts: dict[str, int]


def room_corridors(*, room: Room) -> list[RoomCorridor]:
    """The corridors from `room` (resolved by the caller through the access function) to the other rooms of its
    palace, most links first, then the links inside it. Four reads."""
    links = list(_links(palace_ids=[room.palace_id], room_ids=None, focus=room.pk))
    other_ids = {link.b if link.a == room.pk else link.a for link in links} - {room.pk}
    others = {
        r.id: r
        for r in (
            GraphRoom(id=pk, palace_id=room.palace_id, name=name, kind=kind, ordinal=ordinal, slots=0)
            for pk, name, kind, ordinal in Room.objects.filter(pk__in=other_ids).values_list(
                "id", "name", "kind", "ordinal"
            )
        )
    }
    counts = _active_per_room(palace_ids=[room.palace_id], room_ids=list(others))
    for other in others.values():
        other.memories = counts.get(other.id, 0)
    out = [
        RoomCorridor(other=others.get(link.b if link.a == room.pk else link.a), counts=link.counts)
        for link in links
        if link.a != link.b
    ]
    out.sort(key=lambda c: (-sum(c.counts.values()), c.other.name if c.other else ""))
    inner = next((link for link in links if link.a == link.b), None)
    return out + ([RoomCorridor(other=None, counts=inner.counts)] if inner else [])


def _active_per_room(*, palace_ids: Sequence[int], room_ids: Sequence[int]) -> dict[int, int]:
    active = Memory.objects.filter(
        palace_id__in=palace_ids, status=Memory.Status.ACTIVE, slot__room_id__in=room_ids
    ).order_by()
    return dict(active.values("slot__room_id").annotate(n=Count("id")).values_list("slot__room_id", "n"))


def _links(*, palace_ids: Sequence[int], room_ids: Sequence[int] | None, focus: int | None = None) -> list[RoomLink]:
    """Links between `room_ids` (or, with `focus`, between that room and any room of the palaces): two grouped
    reads, whose rows are at most room pairs × kinds."""
    edges = Edge.objects.filter(palace_id__in=palace_ids).exclude(status=Edge.Status.DISMISSED)
    if focus is not None:
        edges = edges.filter(Q(from_memory__slot__room_id=focus) | Q(to_memory__slot__room_id=focus))
    grouped = (
        edges.values_list("from_memory__slot__room_id", "to_memory__slot__room_id", "kind")
        .annotate(n=Count("id"))
        .order_by()
    )
    wanted = None if room_ids is None else set(room_ids)
    found: dict[tuple[int, int], RoomLink] = {}

    def add(a: int | None, b: int | None, kind: str, n: int) -> None:
        if a is None or b is None or (wanted is not None and not (a in wanted and b in wanted)):
            return
        key = (min(a, b), max(a, b))
        link = found.setdefault(key, RoomLink(a=key[0], b=key[1]))
        link.counts[kind] = link.counts.get(kind, 0) + n

    for a, b, kind, n in grouped:
        add(a, b, EDGE_LINK_KIND.get(kind, "related"), n)
    for a, b, n in _shared_entities(palace_ids=palace_ids, room_ids=room_ids, focus=focus):
        add(a, b, "entity", n)
    return sorted(found.values(), key=lambda link: (link.a, link.b))


def _shared_entities(
    *, palace_ids: Sequence[int], room_ids: Sequence[int] | None, focus: int | None
) -> list[tuple[int, int, int]]:
    """(room, room, entities both mention) for pairs of distinct rooms whose active memories mention one entity.
    Paired in the database from the distinct (room, entity) rows, so a popular entity costs rooms², not
    memories²; the answer is at most one row per room pair."""
    mentions = MemoryEntity._meta.db_table
    memories = Memory._meta.db_table
    slots = Slot._meta.db_table
    where = ["me.palace_id = ANY(%s)", "m.status = %s"]
    params: list[Any] = [list(palace_ids), Memory.Status.ACTIVE]
    if room_ids is not None:
        where.append("s.room_id = ANY(%s)")
        params.append(list(room_ids))
    pair = "a.room_id < b.room_id"
    if focus is not None:
        pair = "a.room_id <> b.room_id AND a.room_id = %s"
        params.append(focus)
    sql = (
        f"WITH re AS (SELECT DISTINCT s.room_id, me.entity_id FROM {mentions} me"  # noqa: S608 - table names only
        f" JOIN {memories} m ON m.id = me.memory_id JOIN {slots} s ON s.id = m.slot_id WHERE {' AND '.join(where)})"
        f" SELECT a.room_id, b.room_id, COUNT(*) FROM re a JOIN re b ON a.entity_id = b.entity_id AND {pair}"
        " GROUP BY a.room_id, b.room_id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(int(a), int(b), int(n)) for a, b, n in cursor.fetchall()]
