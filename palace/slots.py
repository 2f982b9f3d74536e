"""Slotting: every memory is pinned to a `room#slot` coordinate at write time.

Rooms are per kind with a capacity (ATRIUM_ROOM_CAPACITY, default 9, dsh-engram's 7±2); a full room opens
`<name>-2`, `-3`, … and that opening is written to the op log with a warning, because the automatic name is a
placeholder a person may want to replace. Slots are never recycled: a forgotten memory keeps its slot (the closed
wing), so a number always means the same place. Every new slot is appended to the palace's tour route.
A correction inherits the slot of what it replaces and a merge keeps the existing slot, so a topic keeps its place.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Max, OuterRef, Subquery

from palace.actors import Actor
from palace.errors import InvalidInput
from palace.kinds import MemoryKind
from palace.models import Palace, Room, Slot, TourStop
from palace.oplog import OpEntry, oplog_write, oplog_write_many
from palace.sequences import IdReserve

log = logging.getLogger(__name__)

ROOM_NAMES: dict[str, str] = {
    MemoryKind.FACT: "Fact Hall",
    MemoryKind.PREFERENCE: "Preference Pavilion",
    MemoryKind.DECISION: "Decision Chamber",
    MemoryKind.EPISODE: "Episode Gallery",
    MemoryKind.SKILL: "Skill Workshop",
}
# The order rooms are listed in (directory, tours): the order of ROOM_NAMES.
KIND_ORDER = {kind: i for i, kind in enumerate(ROOM_NAMES)}
RENAME_WARNING = "an automatically named room; a person may rename it"


def room_name(kind: str, ordinal: int) -> str:
    base = ROOM_NAMES[kind]
    return base if ordinal == 1 else f"{base}-{ordinal}"


def _open_room(
    *,
    palace: Palace,
    kind: str,
    ordinal: int,
    actor: Actor,
    previous: str | None = None,
    ops: list[OpEntry] | None = None,
) -> Room:
    """Open the kind's room number `ordinal`. `previous`: the full room's name when the caller has it (else read);
    `ops`: where the opening's op row waits (a deferred allocator writes them with its slots), else written now."""
    name = room_name(kind, ordinal)
    # A person may have renamed an earlier room to the name we would pick; number on until one is free.
    suffix = ordinal
    while Room.objects.filter(palace=palace, name=name).exists():
        suffix += 1
        name = f"{ROOM_NAMES[kind]}-{suffix}"
    room = Room.objects.create(
        palace=palace, kind=kind, ordinal=ordinal, name=name, capacity=settings.ATRIUM_ROOM_CAPACITY
    )
    if ordinal > 1:
        if previous is None:
            previous = (
                Room.objects.filter(palace=palace, kind=kind, ordinal=ordinal - 1)
                .values_list("name", flat=True)
                .first()
            )
        log.warning("palace %s: %s is full, opened %s (%s)", palace.pk, previous, name, RENAME_WARNING)
        entry = OpEntry(
            palace=palace,
            target_kind="room",
            target_id=room.pk,
            reason=f"{previous} is full",
            detail={"room": room.name, "kind": kind, "ordinal": ordinal, "warning": RENAME_WARNING},
        )
        if ops is None:
            oplog_write(op="room.open", actor=actor, **vars(entry))
        else:
            ops.append(entry)
    return room


def slot_assign(*, palace: Palace, kind: str, actor: Actor, inherit: Slot | None = None) -> Slot:
    """A new slot for a memory of `kind` (or `inherit`, the slot of the memory it corrects or merges into).

    Must run inside the caller's transaction; the palace row is locked so concurrent writers queue here and two
    memories can never be given the same number.
    """
    if inherit is not None:
        if inherit.palace_id != palace.pk:
            raise InvalidInput("a memory can only inherit a slot of its own palace")
        return inherit
    if kind not in ROOM_NAMES:
        raise InvalidInput(f"unknown memory kind {kind!r}", field="kind")
    Palace.objects.select_for_update().filter(pk=palace.pk).values_list("pk", flat=True).first()
    room = Room.objects.filter(palace=palace, kind=kind).order_by("-ordinal").first()
    # Slots are numbered 1..capacity and never freed, so the highest number says how full the room is.
    used = (Slot.objects.filter(room=room).aggregate(m=Max("number"))["m"] or 0) if room is not None else 0
    if room is None or used >= room.capacity:
        room = _open_room(palace=palace, kind=kind, ordinal=1 if room is None else room.ordinal + 1, actor=actor)
        used = 0
    slot = Slot.objects.create(palace=palace, room=room, number=used + 1)
    last = TourStop.objects.filter(palace=palace).aggregate(m=Max("seq"))["m"] or 0
    TourStop.objects.create(palace=palace, seq=last + 1, slot=slot)
    return slot


@dataclass
class SlotAllocator:
    """Slots for many new memories of one palace inside one transaction (a bulk save, memory/save/bulk.py): what
    `slot_assign` asks per memory (lock the palace, the kind's last room, its highest slot, the tour's last stop) is
    asked once per chunk and counted here. Numbers stay exactly those `slot_assign` would give: the palace row is
    locked on the first slot and stays locked until the transaction ends, so no other writer can slot in between.
    A caller whose savepoint rolls back after a slot was given calls `forget()` (the counted room or numbers may no
    longer exist), and the next slot reads afresh.

    `defer` (a chunk written without a savepoint an item, so any failure rolls back all of it): the slot and tour
    stop rows are not inserted one pair a memory but all at once by `flush()`, before the transaction ends. A slot
    gets its id up front, from the table's own sequence (`reserve` ids in one query), so a memory can point to it at
    once: the memory's foreign key is checked when the transaction commits (Django declares PostgreSQL foreign keys
    DEFERRABLE INITIALLY DEFERRED). Nothing in a save reads a new slot's row back. The `room.open` op rows of the
    rooms it opens wait for `flush()` too (one insert), written before the slots, as `slot_assign` orders them."""

    palace: Palace
    actor: Actor
    defer: bool = False
    reserve: int = 10
    _locked: bool = False
    _rooms: dict[str, tuple[Room | None, int]] = field(default_factory=dict)  # kind -> (last room, highest number)
    _last_stop: int | None = None
    _ids: IdReserve = field(default_factory=IdReserve)
    _pending: list[tuple[Slot, TourStop]] = field(default_factory=list)
    _ops: list[OpEntry] = field(default_factory=list)  # room.open rows waiting for `flush` (defer)

    def __post_init__(self) -> None:
        self._ids.block = max(1, self.reserve)

    def assign(self, kind: str) -> Slot:
        if kind not in ROOM_NAMES:
            raise InvalidInput(f"unknown memory kind {kind!r}", field="kind")
        if not self._locked:
            Palace.objects.select_for_update().filter(pk=self.palace.pk).values_list("pk", flat=True).first()
            self._locked = True
        if not self._rooms:
            self._rooms = self._last_rooms()
        room, used = self._rooms.get(kind, (None, 0))
        if room is None or used >= room.capacity:
            room = _open_room(
                palace=self.palace,
                kind=kind,
                ordinal=1 if room is None else room.ordinal + 1,
                actor=self.actor,
                previous=None if room is None else room.name,
                ops=self._ops if self.defer else None,
            )
            used = 0
        self._rooms[kind] = (room, used + 1)
        if self._last_stop is None:
            self._last_stop = TourStop.objects.filter(palace=self.palace).aggregate(m=Max("seq"))["m"] or 0
        self._last_stop += 1
        if not self.defer:
            slot = Slot.objects.create(palace=self.palace, room=room, number=used + 1)
            TourStop.objects.create(palace=self.palace, seq=self._last_stop, slot=slot)
            return slot
        slot = Slot(id=self._ids.next_id(Slot), palace=self.palace, room=room, number=used + 1)
        self._pending.append((slot, TourStop(palace=self.palace, seq=self._last_stop, slot=slot)))
        return slot

    def _last_rooms(self) -> dict[str, tuple[Room | None, int]]:
        """Each kind's last room and its highest slot number, in one query (what `slot_assign` reads per kind)."""
        highest = Slot.objects.filter(room=OuterRef("pk")).order_by().values("room").annotate(m=Max("number"))
        rooms = (
            Room.objects.filter(palace=self.palace)
            .order_by("kind", "-ordinal")
            .distinct("kind")
            .annotate(used=Subquery(highest.values("m")))
        )
        found: dict[str, tuple[Room | None, int]] = dict.fromkeys(ROOM_NAMES, (None, 0))
        found.update((room.kind, (room, room.used or 0)) for room in rooms)
        return found

    def flush(self) -> None:
        """Insert the deferred slots and tour stops (one statement each), inside the transaction that gave them.
        Ids reserved and not used are gaps in the sequence, as a rolled-back insert leaves."""
        if self._ops:  # the rooms this chunk opened, before the memories in them (as `slot_assign` orders them)
            oplog_write_many(op="room.open", actor=self.actor, entries=self._ops)
        if self._pending:
            Slot.objects.bulk_create([slot for slot, _ in self._pending])
            TourStop.objects.bulk_create([stop for _, stop in self._pending])
        self._pending, self._ops = [], []

    def forget(self) -> None:
        """Lock and read the rooms and the tour afresh on the next slot (a lock taken inside a savepoint that rolled
        back was released with it)."""
        self._locked = False
        self._rooms.clear()
        self._last_stop = None
        self._pending, self._ops = [], []
