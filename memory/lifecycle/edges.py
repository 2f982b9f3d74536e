"""Closing the open contradictions of a memory that is corrected, forgotten or superseded, so a `contradicts` edge
never stays pending about a side that no longer stands. Deciding an edge is memory.lifecycle.resolve."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from memory.models import Edge, Memory
from palace.actors import Actor
from palace.oplog import oplog_write


def edges_close_open(
    *, memory: Memory, resolution: str, reason: str, actor: Actor, now: datetime | None = None
) -> list[int]:
    """Close every pending contradiction touching `memory` (inside the caller's transaction), one op row each."""
    now = now or timezone.now()
    edges = list(
        Edge.objects.select_for_update()
        .filter(kind=Edge.Kind.CONTRADICTS, status=Edge.Status.PENDING)
        .filter(Q(from_memory_id=memory.pk) | Q(to_memory_id=memory.pk))
        .order_by("pk")
    )
    for edge in edges:
        edge.status = Edge.Status.CLOSED
        edge.resolution = resolution
        edge.resolution_reason = reason
        edge.decided_by_id = actor.user_id
        edge.decided_at = now
        edge.save(update_fields=["status", "resolution", "resolution_reason", "decided_by", "decided_at"])
        oplog_write(
            op="edge.close",
            actor=actor,
            palace=memory.palace,
            target_kind="edge",
            target_id=edge.pk,
            reason=reason,
            detail={
                "resolution": resolution,
                "memory": memory.pk,
                "from": edge.from_memory_id,
                "to": edge.to_memory_id,
            },
        )
    return [e.pk for e in edges]
