"""Editing memories after they are saved: corrections (a new memory supersedes the old one), forgetting, restoring
and outcome reports; and the one write check every edit of an existing memory goes through (`memory_lock`, also
used by review). Saving is the pipeline's job (memory/save/pipeline.py).

Every function here writes its op-log row in the same transaction as the change it records.
"""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from memory.knowledge import entities_extract, entities_link
from memory.lifecycle.edges import edges_close_open
from memory.models import Memory
from memory.save import SaveItem, check_source, create_memory, derive_texts, embed_texts, prepare_item
from memory.selectors import memory_successor_id
from memory.text import clean_line, redact
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound
from palace.kinds import KindName
from palace.oplog import oplog_write
from palace.selectors import palace_get, palaces_writable

CONFIDENCE_SUCCESS_STEP = 0.05
CONFIDENCE_FAILURE_STEP = -0.1
OUTCOMES = ("success", "failure")


def memory_writable(*, actor: Actor, palace_id: int) -> None:
    """Defence in depth behind the doors: a person must be an owner or editor of the memory's palace
    (palace.selectors.palace_get with write=True).

    Raises NotFound("memory not found") when the person is not a member at all (an invisible memory answers exactly
    like a nonexistent one), PermissionDenied for a viewer. System jobs act on behalf of the server and pass.
    """
    if actor.system:
        return
    try:
        palace_get(user=actor.user, palace_id=palace_id, write=True)
    except NotFound:
        raise NotFound("memory not found") from None


def memory_lock(*, memory_id: int, actor: Actor) -> Memory:
    """Lock this memory for writing by this actor: the row (with its palace and slot), locked for the rest of the
    caller's transaction, after the write check. Every edit of an existing memory (here and in review) starts here."""
    memory = (
        Memory.objects.select_for_update(of=("self",))
        .select_related("palace", "slot__room")
        .filter(pk=memory_id)
        .first()
    )
    if memory is None:
        # Row-level security locks only rows the actor may write: a memory they can read but not write (a viewer's)
        # is still visible, and gets the same PermissionDenied as without it.
        palace_id = Memory.objects.filter(pk=memory_id).values_list("palace_id", flat=True).first()
        if palace_id is not None:
            memory_writable(actor=actor, palace_id=palace_id)
        raise NotFound("memory not found")
    memory_writable(actor=actor, palace_id=memory.palace_id)
    return memory


def memory_update(
    *,
    memory_id: int,
    actor: Actor,
    content: str,
    placard: str | None = None,
    kind: KindName | None = None,
    expected_version: int | None = None,
    reason: str = "",
    source: str = "rest",
    now: datetime | None = None,
) -> Memory:
    """Correct a memory: a new memory supersedes the old one, which keeps its history and leaves default search.

    The new memory inherits the slot, confidence and importance, and has version = old version + 1. The old row is
    locked (select_for_update) and must still be active or archived: of two concurrent corrections the second
    finds it superseded and gets Conflict, as does a caller whose `expected_version` is stale.
    """
    now = now or timezone.now()
    source = check_source(source)
    reason = _clean_reason(reason, "reason")
    # Cheap checks first (visibility, write role, state) so a doomed request does not pay for an embedding.
    current = (
        Memory.objects.filter(pk=memory_id)
        .select_related("palace")
        .only("id", "palace", "kind", "placard", "speaker")
        .first()
    )
    if current is None:
        raise NotFound("memory not found")
    memory_writable(actor=actor, palace_id=current.palace_id)
    item = SaveItem(
        content=content,
        kind=kind or current.kind,
        placard=current.placard if placard is None else placard,
        speaker=current.speaker,
        occurred_at=now,
    )
    p = prepare_item(item, now=now)
    if p.low_entropy:
        raise InvalidInput("the correction carries no information (too short or only an acknowledgement)")
    search_text, embedding_text = derive_texts(p, "")
    vectors, degraded = embed_texts([embedding_text])
    extraction = entities_extract(palace=current.palace, text=p.content, speaker=p.speaker)
    with transaction.atomic():
        old = memory_lock(memory_id=memory_id, actor=actor)
        if old.status == Memory.Status.SUPERSEDED:
            successor = memory_successor_id(memory=old)
            raise Conflict(f"memory #{old.pk} was already corrected by #{successor}", superseded_by=successor)
        if old.status == Memory.Status.FORGOTTEN:
            raise Conflict(f"memory #{old.pk} is forgotten; restore it before correcting it")
        if expected_version is not None and expected_version != old.version:
            raise Conflict(
                f"memory #{old.pk} is at version {old.version}, not {expected_version}; reload and retry",
                version=old.version,
            )
        p.occurred_at = old.occurred_at
        new = create_memory(
            palace=old.palace,
            p=p,
            source=source,
            actor=actor,
            vector=vectors[0],
            search_text=search_text,
            now=now,
            supersedes=old,
        )
        linked = entities_link(palace=old.palace, memory_id=new.pk, extraction=extraction, now=now)
        old.status = Memory.Status.SUPERSEDED
        old.save(update_fields=["status", "updated_at"])
        closed = edges_close_open(
            memory=old, resolution="corrected", reason=reason or f"corrected by #{new.pk}", actor=actor, now=now
        )
        oplog_write(
            op="memory.update",
            actor=actor,
            palace=old.palace,
            target_kind="memory",
            target_id=new.pk,
            reason=reason,
            detail={
                "supersedes": old.pk,
                "from_version": old.version,
                "version": new.version,
                "redactions": p.redactions,
                "degraded": degraded,
                "slot": new.slot.coordinate if new.slot is not None else None,
                "closed_edges": closed,
                "entities": linked.detail(),
            },
        )
    return new


def _clean_reason(text: str, name: str) -> str:
    """A person's reason or note, cleaned and redacted: it becomes an epitaph and an op row that the console, the
    history and recall show, so a secret pasted into it must not be stored any more than one in a memory's text."""
    return redact(clean_line(text, name, 500)).text


def memory_forget(*, memory_id: int, actor: Actor, reason: str = "") -> Memory:
    """Soft-forget: status forgotten with an epitaph; the row, its slot and its history stay (restorable)."""
    reason = _clean_reason(reason, "reason")
    with transaction.atomic():
        row = memory_lock(memory_id=memory_id, actor=actor)
        if row.status in (Memory.Status.FORGOTTEN, Memory.Status.SUPERSEDED):
            raise Conflict(f"memory #{row.pk} is already {row.status}")
        _status_change(
            row=row, status=Memory.Status.FORGOTTEN, epitaph=reason, op="memory.forget", actor=actor, reason=reason
        )
        edges_close_open(memory=row, resolution="forgotten", reason=reason or "forgotten", actor=actor)
    return row


def memory_restore(*, memory_id: int, actor: Actor, reason: str = "") -> Memory:
    """Bring a forgotten or archived memory back to active. A superseded one is restored by correcting its successor."""
    reason = _clean_reason(reason, "reason")
    with transaction.atomic():
        row = memory_lock(memory_id=memory_id, actor=actor)
        if row.status not in (Memory.Status.FORGOTTEN, Memory.Status.ARCHIVED):
            raise Conflict(f"memory #{row.pk} is {row.status}; only forgotten or archived memories can be restored")
        _status_change(
            row=row, status=Memory.Status.ACTIVE, epitaph="", op="memory.restore", actor=actor, reason=reason
        )
    return row


def memory_archive(*, memory_id: int, actor: Actor, reason: str = "") -> Memory:
    """Active → archived (restorable), as decay leaves it, with the reason as its epitaph: how the console reverts a
    restore that brought back an archived memory."""
    with transaction.atomic():
        row = memory_lock(memory_id=memory_id, actor=actor)
        if row.status != Memory.Status.ACTIVE:
            raise Conflict(f"memory #{row.pk} is {row.status}; only an active memory is archived")
        _status_change(
            row=row, status=Memory.Status.ARCHIVED, epitaph=reason, op="memory.archive", actor=actor, reason=reason
        )
    return row


def _status_change(*, row: Memory, status: str, epitaph: str, op: str, actor: Actor, reason: str) -> None:
    """Move a locked row to `status` (bumping its version) and write the op row, inside the caller's transaction."""
    previous = row.status
    row.status = status
    row.epitaph = epitaph
    row.version += 1
    row.save(update_fields=["status", "epitaph", "version", "updated_at"])
    oplog_write(
        op=op,
        actor=actor,
        palace=row.palace,
        target_kind="memory",
        target_id=row.pk,
        reason=reason,
        detail={"from_status": previous},
    )


def memory_report(*, memory_id: int, actor: Actor, outcome: str, note: str = "") -> Memory:
    """Report whether acting on a memory worked: success +0.05, failure −0.1 confidence, clamped to [0, 1]."""
    if outcome not in OUTCOMES:
        raise InvalidInput("outcome must be success or failure", field="outcome")
    note = _clean_reason(note, "note")
    step = CONFIDENCE_SUCCESS_STEP if outcome == "success" else CONFIDENCE_FAILURE_STEP
    with transaction.atomic():
        row = memory_lock(memory_id=memory_id, actor=actor)
        before = row.confidence
        row.confidence = round(min(1.0, max(0.0, before + step)), 6)
        row.save(update_fields=["confidence", "updated_at"])
        oplog_write(
            op="memory.report",
            actor=actor,
            palace=row.palace,
            target_kind="memory",
            target_id=row.pk,
            reason=note,
            detail={"outcome": outcome, "confidence_before": before, "confidence": row.confidence},
        )
    return row


def memory_reinforce_cited(*, memory_ids: list[int], user: AbstractBaseUser, actor: Actor, batch: str) -> list[int]:
    """Confidence +0.05 (capped at 1) for each active memory a sufficient `assess` cited: the seed's hit
    reinforcement, earned by being the evidence of an answer rather than by merely turning up in a search. Called
    inside the assess transaction, once per search batch. One op row per memory. Returns the ids reinforced.
    Confidence is shared ranking state: only memories in palaces the user may write are reinforced (a viewer's
    verdict changes nothing a project's other members rank by)."""
    rows = list(
        Memory.objects.select_for_update(of=("self",))
        .select_related("palace")
        .filter(pk__in=memory_ids, status=Memory.Status.ACTIVE, palace__in=palaces_writable(user=user))
        .order_by("pk")
    )
    for row in rows:
        before = row.confidence
        row.confidence = round(min(1.0, before + CONFIDENCE_SUCCESS_STEP), 6)
        row.save(update_fields=["confidence", "updated_at"])
        oplog_write(
            op="memory.reinforce",
            actor=actor,
            palace=row.palace,
            target_kind="memory",
            target_id=row.pk,
            reason=f"cited as sufficient evidence (batch {batch})",
            detail={"batch": batch, "confidence_before": before, "confidence": row.confidence},
        )
    return [row.pk for row in rows]
