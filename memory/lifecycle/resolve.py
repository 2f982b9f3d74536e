"""People and agents decide open contradictions: `edge_resolve` settles one pending `contradicts` edge.

Decisions (the edge joins a newer and an older memory, by when the server learned them):
- keep_newer: the older is superseded by the newer (a `supersedes` edge; the newer's chain link when it has none);
- keep_older: the newer is forgotten, the reason as its epitaph;
- both_stand: they are not in conflict (e.g. different contexts); the edge is dismissed with the reason;
- merge: a new text (`content`) supersedes both — a correction of the older, and the newer superseded by it.
The edge and each change write the op log in one transaction. An edge in a palace the actor may not write answers
like a missing one (a viewer: PermissionDenied).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.lifecycle.corrections import memory_forget, memory_lock, memory_update
from memory.lifecycle.edges import edges_close_open
from memory.models import Edge, Memory
from memory.text import clean_line
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound
from palace.oplog import oplog_write
from palace.selectors import palace_get

DECISIONS = ("keep_newer", "keep_older", "both_stand", "merge")
STANDING = (Memory.Status.ACTIVE, Memory.Status.ARCHIVED)


@dataclass
class Resolution:
    edge: Edge
    decision: str
    newer_id: int
    older_id: int
    new_memory: Memory | None = None  # the merged text (merge)


def _edge_for_writing(*, edge_id: int, actor: Actor) -> Edge:
    edge = (
        Edge.objects.select_for_update(of=("self",))
        .select_related("palace", "from_memory", "to_memory")
        .filter(pk=edge_id, kind=Edge.Kind.CONTRADICTS)
        .first()
    )
    if edge is None:
        # Row-level security locks only rows the actor may write: an edge they can read but not write (a viewer's)
        # is still visible, and gets the same PermissionDenied as without it (memory.lifecycle.corrections.memory_lock).
        palace_id = (
            Edge.objects.filter(pk=edge_id, kind=Edge.Kind.CONTRADICTS).values_list("palace_id", flat=True).first()
        )
        if palace_id is not None and not actor.system:
            palace_get(user=actor.user, palace_id=palace_id, write=True)
        raise NotFound("edge not found")
    if not actor.system:
        try:
            palace_get(user=actor.user, palace_id=edge.palace_id, write=True)
        except NotFound:
            raise NotFound("edge not found") from None
    if edge.status != Edge.Status.PENDING:
        raise Conflict(f"edge #{edge.pk} is already {edge.status} ({edge.resolution or 'no resolution'})")
    return edge


def _supersede(*, newer: Memory, older: Memory, actor: Actor, reason: str, now: datetime) -> None:
    """Mark `older` superseded by `newer` (locked rows), with the chain link and a `supersedes` edge."""
    if older.status not in STANDING:
        return  # already superseded or forgotten: nothing left to replace
    older.status = Memory.Status.SUPERSEDED
    older.version += 1
    older.save(update_fields=["status", "version", "updated_at"])
    if newer.supersedes_id is None:
        newer.supersedes = older
        newer.save(update_fields=["supersedes", "updated_at"])
    Edge.objects.get_or_create(
        palace=older.palace, from_memory=newer, to_memory=older, kind=Edge.Kind.SUPERSEDES, defaults={"weight": 1.0}
    )
    edges_close_open(memory=older, resolution="superseded", reason=reason, actor=actor, now=now)
    oplog_write(
        op="memory.replace",
        actor=actor,
        palace=older.palace,
        target_kind="memory",
        target_id=older.pk,
        reason=reason,
        detail={"superseded_by": newer.pk},
    )


def edge_resolve(
    *,
    edge_id: int,
    decision: str,
    actor: Actor,
    reason: str = "",
    content: str = "",
    source: str = "rest",
    now: datetime | None = None,
) -> Resolution:
    """Settle a pending contradiction (the module docstring)."""
    now = now or timezone.now()
    if decision not in DECISIONS:
        raise InvalidInput(f"decision must be one of {', '.join(DECISIONS)}", field="decision")
    reason = clean_line(reason, "reason", 500)
    if decision == "both_stand" and not reason:
        raise InvalidInput("both_stand needs a reason: why do both memories stand?", field="reason")
    if decision == "merge" and not content.strip():
        raise InvalidInput("merge needs `content`: the corrected text that replaces both", field="content")
    if decision != "merge" and content:
        raise InvalidInput("`content` is only for decision=merge", field="content")
    with transaction.atomic():
        edge = _edge_for_writing(edge_id=edge_id, actor=actor)
        a, b = edge.from_memory, edge.to_memory
        newer, older = (a, b) if (a.created_at, a.pk) >= (b.created_at, b.pk) else (b, a)
        edge.status = Edge.Status.DISMISSED if decision == "both_stand" else Edge.Status.CONFIRMED
        edge.resolution, edge.resolution_reason = decision, reason
        edge.decided_by_id, edge.decided_at = actor.user_id, now
        edge.save(update_fields=["status", "resolution", "resolution_reason", "decided_by", "decided_at"])
        result = Resolution(edge=edge, decision=decision, newer_id=newer.pk, older_id=older.pk)
        note = reason or f"contradiction edge #{edge.pk}: {decision.replace('_', ' ')}"
        if decision == "keep_newer":
            older, newer = memory_lock(memory_id=older.pk, actor=actor), memory_lock(memory_id=newer.pk, actor=actor)
            _supersede(newer=newer, older=older, actor=actor, reason=note, now=now)
        elif decision == "keep_older" and newer.status in STANDING:
            memory_forget(memory_id=newer.pk, actor=actor, reason=note)
        elif decision == "merge":
            new = memory_update(memory_id=older.pk, actor=actor, content=content, reason=note, source=source, now=now)
            _supersede(newer=new, older=memory_lock(memory_id=newer.pk, actor=actor), actor=actor, reason=note, now=now)
            result.new_memory = new
        oplog_write(
            op="edge.decide",
            actor=actor,
            palace=edge.palace,
            target_kind="edge",
            target_id=edge.pk,
            reason=reason,
            detail={
                "decision": decision,
                "newer": newer.pk,
                "older": older.pk,
                "new_memory": result.new_memory.pk if result.new_memory else None,
            },
        )
    return result
