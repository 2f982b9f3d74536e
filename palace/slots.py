"""Slotting: every memory is pinned to a `room#slot` coordinate at write time.

Rooms are per kind with a capacity (ATRIUM_ROOM_CAPACITY, default 9); a full room opens `<name>-2`, `-3`, … .
Slots are never recycled, and every new slot is appended to the palace's tour route.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from palace.actors import Actor
from palace.models import Palace, Room, Slot, TourStop
from palace.oplog import oplog_write

ROOM_NAMES = {
    "fact": "Fact Hall",
    "preference": "Preference Pavilion",
    "decision": "Decision Chamber",
    "episode": "Episode Gallery",
    "skill": "Skill Workshop",
}


def room_name(kind: str, ordinal: int) -> str:
    base = ROOM_NAMES[kind]
    return base if ordinal == 1 else f"{base}-{ordinal}"


def slot_assign(*, palace: Palace, kind: str, actor: Actor, inherit: Slot | None = None) -> Slot:
    """A new slot for a memory of `kind` (or `inherit`, the slot of the memory it corrects or merges into).

    Must run inside the caller's transaction; the palace row is locked so concurrent writers queue here.
    """
    if inherit is not None:
        return inherit
    if kind not in ROOM_NAMES:
        raise ValueError(f"unknown memory kind {kind!r}")
    Palace.objects.select_for_update().filter(pk=palace.pk).first()
    room = Room.objects.filter(palace=palace, kind=kind).order_by("-ordinal").first()
    used = Slot.objects.filter(room=room).count() if room is not None else 0
    if room is None or used >= room.capacity:
        ordinal = 1 if room is None else room.ordinal + 1
        room = Room.objects.create(
            palace=palace,
            kind=kind,
            ordinal=ordinal,
            name=room_name(kind, ordinal),
            capacity=settings.ATRIUM_ROOM_CAPACITY,
        )
        used = 0
        if ordinal > 1:
            oplog_write(
                op="room.open",
                actor=actor,
                palace=palace,
                target_kind="room",
                target_id=room.pk,
                reason=f"{room_name(kind, ordinal - 1)} is full",
                detail={"room": room.name, "warning": "an automatically named room; a person may rename it"},
            )
    slot = Slot.objects.create(palace=palace, room=room, number=used + 1)
    last = TourStop.objects.filter(palace=palace).aggregate(m=Max("seq"))["m"] or 0
    TourStop.objects.create(palace=palace, seq=last + 1, slot=slot)
    return slot


def slot_assign_atomic(*, palace: Palace, kind: str, actor: Actor) -> Slot:
    with transaction.atomic():
        return slot_assign(palace=palace, kind=kind, actor=actor)
