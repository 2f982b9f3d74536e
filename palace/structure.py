"""Reads and writes over the palace's structure alone (rooms, slots, the tour route), with no memory content.

What a slot holds is the memory app's business (memory/selectors/rooms.py builds the room directory,
memory/search/walks.py the tours, on top of these).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from django.db.models import Count, QuerySet

from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound
from palace.models import Palace, Room, Slot, TourStop
from palace.oplog import oplog_write
from palace.selectors import palaces_readable
from palace.slots import KIND_ORDER, ROOM_NAMES

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

MAX_ROOM_NAME = 120


def rooms_of(*, palace: Palace, kind: str | None = None) -> list[Room]:
    """The palace's rooms in directory order (by kind as in ROOM_NAMES, then ordinal), each with `slots_used`."""
    qs: QuerySet[Room] = Room.objects.filter(palace=palace).annotate(slots_used=Count("slots"))
    if kind is not None:
        qs = qs.filter(kind=kind)
    return sorted(qs, key=lambda r: (KIND_ORDER.get(r.kind, 99), r.ordinal))


def room_get(*, palace: Palace, name: str) -> Room:
    room = Room.objects.filter(palace=palace, name=name).first()
    if room is None:
        raise NotFound(f"no room named {name!r} in this palace")
    return room


def room_in(*, palace_ids: Sequence[int], room_id: int) -> Room | None:
    """A room of one of the given (already resolved) palaces, or None."""
    return Room.objects.filter(palace_id__in=palace_ids, pk=room_id).first()


def room_visible(*, user: AbstractBaseUser | AnonymousUser | None, room_id: int) -> Room:
    """A room of a palace the user may read; NotFound when it does not exist or is invisible."""
    room = Room.objects.filter(pk=room_id, palace__in=palaces_readable(user=user).values("pk")).first()
    if room is None:
        raise NotFound("room not found")
    return room


def slots_of(*, palace: Palace, room: Room | None = None) -> QuerySet[Slot]:
    """Slots in tour order (the order they were opened), with room and tour stop loaded."""
    qs = Slot.objects.filter(palace=palace).select_related("room", "tour_stop")
    if room is not None:
        qs = qs.filter(room=room)
    return qs.order_by("tour_stop__seq", "pk")


SLOT_CURSOR_PREFIX = "slot:"


def slots_page(
    *, palace: Palace, room: Room | None = None, cursor: str | None = None, limit: int = 50
) -> tuple[list[Slot], str | None]:
    """One page of `slots_of`, keyset on the tour stop's seq (every slot gets its stop when it is opened,
    palace.slots.slot_assign), and the cursor of the next page (None on the last). The cursor is opaque like the
    memory lists' (urlsafe base64); one this server did not issue is InvalidInput."""
    qs = slots_of(palace=palace, room=room)
    if cursor:
        qs = qs.filter(tour_stop__seq__gt=_slot_cursor_seq(cursor))
    rows = list(qs[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    if not more or not rows:
        return rows, None
    token = f"{SLOT_CURSOR_PREFIX}{rows[-1].tour_stop.seq}".encode()
    return rows, base64.urlsafe_b64encode(token).decode().rstrip("=")


def _slot_cursor_seq(cursor: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raw = ""
    seq = raw.removeprefix(SLOT_CURSOR_PREFIX)
    if not raw.startswith(SLOT_CURSOR_PREFIX) or not (seq.isascii() and seq.isdigit()) or int(seq) >= 2**31:
        raise InvalidInput("cursor is not one this server issued", field="cursor")
    return int(seq)


def tour_route(*, palace: Palace) -> QuerySet[TourStop]:
    """The fixed route: every slot of the palace in the order it was appended (append-only)."""
    return TourStop.objects.filter(palace=palace).select_related("slot__room").order_by("seq")


def slot_neighbours(*, slot: Slot, span: int = 1) -> list[Slot]:
    """Slots of the same room within `span` numbers of `slot` (encoding-specificity cues), nearest first."""
    numbers = [n for d in range(1, span + 1) for n in (slot.number - d, slot.number + d)]
    found = {s.number: s for s in Slot.objects.filter(room_id=slot.room_id, number__in=numbers).select_related("room")}
    return [found[n] for n in numbers if n in found]


def room_rename(*, palace: Palace, room: Room, name: str, actor: Actor) -> Room:
    """Give an automatically opened room a human name. Coordinates follow the new name; slots stay put.

    `name` arrives cleaned by the door (memory.text.scrub_inbound_text, one line: palace/ sits below memory.text);
    the MCP exit strips protocol tags again whatever is stored (api/mcp/runner.py)."""
    name = " ".join(str(name).split())
    if not name or len(name) > MAX_ROOM_NAME or "#" in name:
        raise InvalidInput(f"a room name is 1–{MAX_ROOM_NAME} characters without '#'", field="name")
    if room.palace_id != palace.pk:
        raise NotFound("room not found")
    if name == room.name:
        return room
    old = room.name
    try:
        with transaction.atomic():
            room.name = name
            room.save(update_fields=["name"])
            oplog_write(
                op="room.rename",
                actor=actor,
                palace=palace,
                target_kind="room",
                target_id=room.pk,
                reason=f"{old} → {name}",
                detail={"from": old, "to": name, "kind": room.kind, "default_name": ROOM_NAMES.get(room.kind, "")},
            )
    except IntegrityError:
        room.name = old
        raise Conflict(f"this palace already has a room named {name!r}") from None
    return room
