"""One memory by id, for the panel: visible only through the palace access function, else NotFound (404)."""

from __future__ import annotations

from django.http import HttpRequest

from memory.models import Memory
from palace import selectors
from palace.errors import NotFound
from palace.models import Room


def memory_for(request: HttpRequest, memory_id: int, *, write: bool = False) -> Memory:
    """The memory if the caller may read it (and, with `write`, change it: PermissionDenied for a viewer)."""
    memory = Memory.objects.select_related("slot__room", "palace").filter(pk=memory_id).first()
    if memory is None:
        raise NotFound("memory not found")
    selectors.palace_get(user=request.user, palace_id=memory.palace_id, write=write)
    return memory


def room_for(request: HttpRequest, room_id: int) -> Room:
    room = Room.objects.filter(pk=room_id).first()
    if room is None:
        raise NotFound("room not found")
    selectors.palace_get(user=request.user, palace_id=room.palace_id)
    return room
