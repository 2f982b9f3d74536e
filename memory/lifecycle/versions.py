"""Versions you can bring back: check out an earlier version of a supersede chain, undo a distillation, and act on
the scheduled distillation's stored proposals (apply with the same code as `memory_distill apply`, or reject).

History is never rewritten. A checkout is a new head whose content is the old version's, superseding the current
head; an undone distillation restores the members and archives the rule with the reason as its epitaph. Each
writes its op rows in the same transaction as the change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memory.jobs import distill as jobs
from memory.lifecycle.corrections import memory_lock, memory_writable
from memory.models import DistillProposal, Edge, Memory
from memory.save.input import Prepared, check_source, clean_line
from memory.save.pipeline import create_memory
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound
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


@dataclass
class DistillUndo:
    rule: Memory
    restored: list[int] = field(default_factory=list)


def distill_undo(*, rule_id: int, actor: Actor, reason: str = "", now: datetime | None = None) -> DistillUndo:
    """Undo a distillation in one action: its members active again, the rule archived with the reason as its
    epitaph (restorable), op rows `memory.distill_undo` (the rule) and `memory.unsupersede` (each member), and the
    member set kept as a rejected proposal so the scheduled run does not merge it again."""
    now = now or timezone.now()
    reason = clean_line(reason, "reason", 500)
    with transaction.atomic():
        rule = memory_lock(memory_id=rule_id, actor=actor)
        member_ids = [int(i) for i in (rule.meta or {}).get("distilled_from", [])]
        if rule.source_kind != Memory.Source.DISTILL or not member_ids:
            raise InvalidInput(f"memory #{rule.pk} is not a distilled rule", field="id")
        if rule.status != Memory.Status.ACTIVE:
            raise Conflict(f"rule #{rule.pk} is {rule.status}; only an active rule can be undone")
        members = list(Memory.objects.select_for_update(of=("self",)).filter(pk__in=member_ids).order_by("pk"))
        changed = [m.pk for m in members if m.status != Memory.Status.SUPERSEDED]
        if len(members) != len(member_ids) or changed:
            raise Conflict(f"members {changed or member_ids} of rule #{rule.pk} changed since; undo them one by one")
        epitaph = f"distillation undone{': ' + reason if reason else ''}"
        Memory.objects.filter(pk=rule.pk).update(
            status=Memory.Status.ARCHIVED, epitaph=epitaph, version=F("version") + 1, updated_at=now
        )
        Memory.objects.filter(pk__in=member_ids).update(
            status=Memory.Status.ACTIVE, version=F("version") + 1, updated_at=now
        )
        oplog_write(
            op="memory.distill_undo",
            actor=actor,
            palace=rule.palace,
            target_kind="memory",
            target_id=rule.pk,
            reason=reason,
            detail={"members": member_ids, "from_status": "active", "status": "archived"},
        )
        for pk in member_ids:
            oplog_write(
                op="memory.unsupersede",
                actor=actor,
                palace=rule.palace,
                target_kind="memory",
                target_id=pk,
                reason=f"distillation #{rule.pk} undone",
                detail={"from_status": "superseded", "distilled_into": rule.pk},
            )
        DistillProposal.objects.create(
            palace=rule.palace,
            kind=rule.kind,
            member_ids=sorted(member_ids),
            content=rule.content,
            placard=rule.placard,
            producer=str((rule.meta or {}).get("producer", "")),
            status=DistillProposal.Status.REJECTED,
            rule=rule,
            reason=epitaph,
            decided_by_id=actor.user_id,
            decided_at=now,
        )
    rule.refresh_from_db()
    return DistillUndo(rule=rule, restored=member_ids)


# --- stored proposals ----------------------------------------------------------------------------------------------


def distill_proposals_store(*, result: jobs.DistillResult, now: datetime | None = None) -> list[DistillProposal]:
    """Keep a suggest run's clusters as pending proposals; a member set already pending or rejected is skipped."""
    now = now or timezone.now()
    stored: list[DistillProposal] = []
    for c in result.clusters:
        members = sorted(c.member_ids)
        known = DistillProposal.objects.filter(
            palace_id=c.palace_id,
            member_ids=members,
            status__in=[DistillProposal.Status.PENDING, DistillProposal.Status.REJECTED],
        )
        if known.exists():
            continue
        stored.append(
            DistillProposal.objects.create(
                palace_id=c.palace_id,
                kind=c.kind,
                member_ids=members,
                content=c.content,
                placard=c.placard,
                producer=c.producer,
                fallback=c.fallback[:300],
                min_similarity=c.min_similarity,
                created_at=now,
            )
        )
    return stored


def _proposal_lock(*, proposal_id: int, actor: Actor) -> DistillProposal:
    proposal = DistillProposal.objects.select_for_update(of=("self",)).select_related("palace").filter(pk=proposal_id)
    found = proposal.first()
    if found is None:
        raise NotFound("proposal not found")
    try:
        memory_writable(actor=actor, palace_id=found.palace_id)
    except NotFound:
        raise NotFound("proposal not found") from None
    if found.status != DistillProposal.Status.PENDING:
        raise Conflict(f"proposal #{found.pk} is already {found.status}")
    return found


def distill_proposal_apply(*, proposal_id: int, actor: Actor, now: datetime | None = None) -> DistillProposal:
    """Apply a pending proposal with the same code as `memory_distill apply` (memory.jobs.distill_apply_cluster):
    the rule is written then (by the LLM when configured), the members superseded. Refused with Conflict, and left
    pending, when a member changed since it was proposed."""
    now = now or timezone.now()
    with transaction.atomic():
        proposal = _proposal_lock(proposal_id=proposal_id, actor=actor)
        members = list(Memory.objects.filter(pk__in=proposal.member_ids))
        cluster = jobs.DistillCluster(
            palace_id=proposal.palace_id,
            kind=proposal.kind,
            member_ids=list(proposal.member_ids),
            min_similarity=proposal.min_similarity,
            confidence=max((m.confidence for m in members), default=0.0),
        )
        jobs.distill_apply_cluster(cluster=cluster, actor=actor, now=now, config=jobs.llm_config_from_settings())
        if cluster.rule_id is None:
            raise Conflict(f"proposal #{proposal.pk} cannot be applied: {cluster.skipped}; reject it")
        proposal.status = DistillProposal.Status.APPLIED
        proposal.rule_id = cluster.rule_id
        proposal.decided_by_id = actor.user_id
        proposal.decided_at = now
        proposal.save(update_fields=["status", "rule", "decided_by", "decided_at"])
        oplog_write(
            op="distill.apply",
            actor=actor,
            palace=proposal.palace,
            target_kind="distill_proposal",
            target_id=proposal.pk,
            detail={"members": proposal.member_ids, "rule": cluster.rule_id, "producer": cluster.producer},
        )
    return proposal


def distill_proposal_reject(
    *, proposal_id: int, actor: Actor, reason: str = "", now: datetime | None = None
) -> DistillProposal:
    """Reject a pending proposal: it is kept, with the reason, and the same member set is not proposed again."""
    now = now or timezone.now()
    reason = clean_line(reason, "reason", 500)
    with transaction.atomic():
        proposal = _proposal_lock(proposal_id=proposal_id, actor=actor)
        proposal.status = DistillProposal.Status.REJECTED
        proposal.reason = reason
        proposal.decided_by_id = actor.user_id
        proposal.decided_at = now
        proposal.save(update_fields=["status", "reason", "decided_by", "decided_at"])
        oplog_write(
            op="distill.reject",
            actor=actor,
            palace=proposal.palace,
            target_kind="distill_proposal",
            target_id=proposal.pk,
            reason=reason,
            detail={"members": proposal.member_ids},
        )
    return proposal
