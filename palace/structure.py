"""Reads and writes over the palace's structure alone (rooms, slots, the tour route), with no memory content.

What a slot holds is the memory app's business (memory/selectors/rooms.py builds the room directory,
memory/search/walks.py the tours, on top of these).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, QuerySet
from django.utils import translation

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


ROOM_NUMBERED = re.compile(r"^(?P<base>.+?)(?:-(?P<n>\d+))?$")
ROOMS_LISTED = 30  # an unknown room's error names at most this many of the palaces' rooms


def room_aliases() -> dict[str, str]:
    """Every spelling of a default room name (lower case) -> its stored English name: the English name, the kind it
    holds ("fact"), and its name in every language the panel speaks (settings.LANGUAGES; the msgids are marked in
    panel/labels.py, so the panel and this read one catalogue)."""
    aliases: dict[str, str] = {}
    for kind, english in ROOM_NAMES.items():
        aliases[english.lower()] = aliases[str(kind).lower()] = english
        for code, _name in settings.LANGUAGES:
            with translation.override(code):
                aliases[translation.gettext(english).lower()] = english
    return aliases


def room_spellings(english: str) -> list[str]:
    """`Fact Hall-2` and its translations (`事实厅-2`), the English first; a renamed room has only its own name."""
    match = ROOM_NUMBERED.match(english)
    if match is None or match["base"] not in ROOM_NAMES.values():
        return [english]
    suffix = f"-{match['n']}" if match["n"] else ""
    spelled = [english]
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            spelled.append(translation.gettext(match["base"]) + suffix)
    return list(dict.fromkeys(spelled))


def room_name_resolve(*, palace_ids: Sequence[int], name: str) -> str:
    """The stored room name `name` means in these (already resolved) palaces: a room's own name (any case), or a
    default room by its English name, its kind or its translated name as the panel shows it (事实厅, 事实厅-2).
    InvalidInput naming the accepted spellings for anything else."""
    wanted = " ".join(name.split())
    rooms = Room.objects.filter(palace_id__in=palace_ids).values_list("kind", "ordinal", "name")
    stored = [name for _k, _o, name in sorted(rooms, key=lambda r: (KIND_ORDER.get(r[0], 99), r[1], r[2]))]
    by_lower = {n.lower(): n for n in stored}
    if wanted.lower() in by_lower:
        return by_lower[wanted.lower()]
    match = ROOM_NUMBERED.match(wanted)
    english = room_aliases().get(match["base"].lower()) if match is not None else None
    if english is not None and match is not None:
        return f"{english}-{match['n']}" if match["n"] else english
    known = [" / ".join(room_spellings(n)) for n in dict.fromkeys(stored)] or [
        " / ".join(room_spellings(n)) for n in ROOM_NAMES.values()
    ]
    more = f" and {len(known) - ROOMS_LISTED} more" if len(known) > ROOMS_LISTED else ""
    raise InvalidInput(
        f"room {wanted!r} is no room of the palaces searched; send a room's name (English or as the panel shows it) "
        f"or a kind ({', '.join(ROOM_NAMES)}): {'; '.join(known[:ROOMS_LISTED])}{more}",
        field="room",
    )


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
