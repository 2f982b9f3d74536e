"""Versions of a memory: the head of a supersede chain, and checking out an earlier version.

History is never rewritten. A checkout is a new head whose content is the old version's, superseding the current
head, with its op row in the same transaction as the change. (Reverting a distillation, which brings its members
back, lives with distillation: memory/jobs/distill.py.)
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.lifecycle.corrections import memory_lock
from memory.models import Edge, Memory
from memory.save import Prepared, check_source, create_memory
from memory.text import clean_line
from palace.actors import Actor
from palace.errors import Conflict
from palace.oplog import oplog_write

MAX_CHAIN = 1000  # a supersede chain longer than this is refused rather than walked forever


def _successor_id(memory: Memory) -> int | None:
    """The version that replaced this one: a correction (its `supersedes`) or a distilled rule (a supersedes edge)."""
    direct = Memory.objects.filter(palace_id=memory.palace_id, supersedes_id=memory.pk).order_by("pk")
    found = direct.values_list("pk", flat=True).first()
    if found is not None:
        return int(found)
    edge = Edge.objects.filter(to_memory_id=memory.pk, kind=Edge.Kind.SUPERSEDES).order_by("-pk")
    return edge.values_list("from_memory_id", flat=True).first()


def chain_head(memory: Memory) -> Memory:
    """The current version of the chain this memory belongs to (itself when it is not superseded)."""
    current = memory
    for _ in range(MAX_CHAIN):
        if current.status != Memory.Status.SUPERSEDED:
            return current
        successor = _successor_id(current)
        if successor is None:
            return current
        current = Memory.objects.get(pk=successor)
    raise Conflict(f"the supersede chain of memory #{memory.pk} is longer than {MAX_CHAIN} versions")


def memory_checkout(
    *, memory_id: int, actor: Actor, reason: str = "", source: str = "rest", now: datetime | None = None
) -> Memory:
    """Make an earlier version current again.

    1. Lock the version (write check: an outsider gets NotFound); it must be superseded (an earlier version).
    2. Find and lock the chain's current head; it must be active or archived (a forgotten head is restored first).
    3. Write a new head with the old version's content, placard, kind, speaker, world time, redactions and vector
       (it was embedded once already), superseding the head: slot, confidence and importance are the head's.
    4. The head becomes superseded; op row `memory.checkout` on the new head.
    """
    now = now or timezone.now()
    source = check_source(source)
    reason = clean_line(reason, "reason", 500)
    with transaction.atomic():
        old = memory_lock(memory_id=memory_id, actor=actor)
        if old.status != Memory.Status.SUPERSEDED:
            raise Conflict(f"memory #{old.pk} is {old.status}, not an earlier version; nothing to bring back")
        head = memory_lock(memory_id=chain_head(old).pk, actor=actor)
        if head.status not in (Memory.Status.ACTIVE, Memory.Status.ARCHIVED):
            raise Conflict(f"the current version #{head.pk} is {head.status}; restore it before checking out #{old.pk}")
        p = Prepared(
            content=old.content,
            placard=old.placard,
            kind=old.kind,
            speaker=old.speaker,
            source_session="",
            source_turn="",
            source_seq=None,
            occurred_at=old.occurred_at,
            importance=None,
            enrol_review=None,
            restore=False,
            redactions=list(old.redactions),
            low_entropy=False,
        )
        vector = None if old.embedding is None else [float(x) for x in old.embedding]
        new = create_memory(
            palace=head.palace,
            p=p,
            source=source,
            actor=actor,
            vector=vector,
            search_text=old.search_text,
            now=now,
            supersedes=head,
        )
        if vector is not None and old.embedding_model:
            Memory.objects.filter(pk=new.pk).update(embedding_model=old.embedding_model, meta={"checkout_of": old.pk})
        else:
            Memory.objects.filter(pk=new.pk).update(meta={"checkout_of": old.pk})
        head.status = Memory.Status.SUPERSEDED
        head.save(update_fields=["status", "updated_at"])
        oplog_write(
            op="memory.checkout",
            actor=actor,
            palace=head.palace,
            target_kind="memory",
            target_id=new.pk,
            reason=reason,
            detail={
                "checkout_of": old.pk,
                "supersedes": head.pk,
                "from_version": head.version,
                "version": new.version,
                "slot": new.slot.coordinate if new.slot is not None else None,
            },
        )
    new.refresh_from_db()
    return new


# --- stored proposals ----------------------------------------------------------------------------------------------
