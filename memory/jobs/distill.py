"""Distillation: same-topic memories merged into one higher rule, with a supersede chain, and everything that
follows from it: clustering, the rule's text (a chat model when configured, the extractive rules otherwise), the
scheduled run's stored proposals (apply with the same code as `memory_distill apply`, or reject), and reverting a
distillation (members back, the rule archived).

1. Cluster: same palace and kind, each member at least ATRIUM_DISTILL_SIMILARITY from the cluster's seed.
2. Suggest (the scheduled default): each cluster with a preview of its rule, kept as a pending proposal; nothing
   changes. Apply: per cluster, in one transaction, the rule written, the members superseded, op rows for each.
3. A person applies or rejects a proposal; a rejected or reverted member set is not proposed again.

Idempotent like every job: members are locked and re-checked, so a second run finds nothing to merge.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memory.jobs.distill_llm import DISTILLED_RULE_SCHEMA as DISTILLED_RULE_SCHEMA
from memory.jobs.distill_llm import DistilledRule as DistilledRule
from memory.jobs.distill_llm import distill_with_llm
from memory.lifecycle import memory_lock, memory_writable
from memory.models import DistillProposal, Edge, Memory, MemoryEntity
from memory.providers import (
    EmbedderUnavailable,
    LLMConfig,
    LLMError,
    embed_passages,
    embedder_model_name,
    llm_config,
)
from memory.text import build_embedding_text, build_search_text, clean_line, scrub_inbound_text
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound
from palace.models import Palace
from palace.oplog import oplog_write
from palace.slots import slot_assign

log = logging.getLogger(__name__)

DISTILL_JOB = "distill"
MAX_CLUSTER = 12  # members per rule: keeps the LLM prompt and the merged text bounded
RULE_MAX_CHARS = 2000
PLACARD_MAX_CHARS = 80
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")


@dataclass
class DistillCluster:
    palace_id: int
    kind: str
    member_ids: list[int]
    min_similarity: float  # the lowest similarity of a member to the cluster's seed
    content: str = ""
    placard: str = ""
    producer: str = ""  # "llm" or "rules": what wrote the rule
    fallback: str = ""  # why the LLM was not used or failed ("" when it wrote the rule)
    confidence: float = 0.0  # inherited: the maximum of the members'
    rule_id: int | None = None  # set when applied
    skipped: str = ""  # why an apply did not happen (members changed meanwhile)
    redacted: list[str] = field(default_factory=list)  # what the entrance scrubbed from the rule's text (types)


@dataclass
class DistillResult:
    mode: str  # "suggest" or "apply"
    llm_configured: bool
    clusters: list[DistillCluster] = field(default_factory=list)

    @property
    def applied(self) -> int:
        return sum(1 for c in self.clusters if c.rule_id is not None)


# --- clusters and the rules' rule -----------------------------------------------------------------------------------


def distill_clusters(*, palace: Palace | None = None) -> list[DistillCluster]:
    """Groups of same-topic active memories: same palace and kind, each member at least ATRIUM_DISTILL_SIMILARITY
    (cosine) from the cluster's seed, at least ATRIUM_DISTILL_MIN_CLUSTER members (at most MAX_CLUSTER).

    Seeds are taken oldest first, so the same store always clusters the same way. Memory stays O(n) per kind.
    """
    threshold = settings.ATRIUM_DISTILL_SIMILARITY
    minimum = settings.ATRIUM_DISTILL_MIN_CLUSTER
    qs = Memory.objects.filter(status=Memory.Status.ACTIVE, embedding__isnull=False)
    if palace is not None:
        qs = qs.filter(palace=palace)
    groups: dict[tuple[int, str], list[tuple[int, Any]]] = {}
    for pk, palace_id, kind, vector in qs.order_by("created_at", "pk").values_list(
        "pk", "palace_id", "kind", "embedding"
    ):
        groups.setdefault((palace_id, kind), []).append((pk, vector))
    clusters: list[DistillCluster] = []
    for (palace_id, kind), rows in sorted(groups.items()):
        if len(rows) < minimum:
            continue
        ids = [pk for pk, _ in rows]
        matrix = np.asarray([np.asarray(v, dtype=np.float32) for _, v in rows])
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = matrix / np.where(norms == 0, 1, norms)
        taken = np.zeros(len(ids), dtype=bool)
        for seed in range(len(ids)):
            if taken[seed]:
                continue
            sims = matrix @ matrix[seed]
            candidates = np.flatnonzero((sims >= threshold) & ~taken)
            if len(candidates) < minimum:
                continue
            near = [int(j) for j in candidates[np.argsort(-sims[candidates], kind="stable")][:MAX_CLUSTER]]
            if seed not in near:
                continue
            taken[near] = True
            members = sorted(near)  # oldest first; the seed (oldest) leads
            clusters.append(
                DistillCluster(
                    palace_id=palace_id,
                    kind=kind,
                    member_ids=[ids[j] for j in members],
                    min_similarity=round(float(min(sims[j] for j in members)), 4),
                )
            )
    return clusters


def _sentence_key(sentence: str) -> str:
    text = unicodedata.normalize("NFKC", sentence).casefold()
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


def distill_rules(*, contents: list[str], placards: list[str]) -> tuple[str, str]:
    """The extractive merge: every distinct sentence of the members, oldest first, repeats dropped (also a sentence
    contained in one already kept), cut at a sentence boundary at 2000 characters. The placard is the most common
    one among the members, else the start of the first sentence."""
    kept: list[str] = []
    keys: list[str] = []
    for content in contents:
        for sentence in _SENTENCE.split(content.strip()):
            sentence = " ".join(sentence.split())
            key = _sentence_key(sentence)
            if not key or any(key == k or key in k for k in keys):
                continue
            # A longer restatement takes the place of the (first) shorter sentence it contains.
            contained = [i for i, k in enumerate(keys) if k and k in key]
            for i in contained[1:]:
                kept[i], keys[i] = "", ""
            if contained:
                kept[contained[0]], keys[contained[0]] = sentence, key
            else:
                kept.append(sentence)
                keys.append(key)
    text = ""
    for sentence in (s for s in kept if s):
        joined = f"{text} {sentence}".strip()
        if len(joined) > RULE_MAX_CHARS:
            break
        text = joined
    named = Counter(p.strip() for p in placards if p.strip())
    if named:
        top = max(named.values())
        placard = next(p.strip() for p in placards if p.strip() and named[p.strip()] == top)
    else:
        first = next((s for s in kept if s), text)
        placard = first[:PLACARD_MAX_CHARS]
    return text or contents[0][:RULE_MAX_CHARS], placard[:PLACARD_MAX_CHARS]


def _write_rule(*, cluster: DistillCluster, members: list[Memory], config: LLMConfig | None) -> None:
    """Fill the cluster's content, placard and producer: the LLM when configured and it answers well, else rules."""
    contents = [m.content for m in members]
    if config is None:
        cluster.fallback = "no LLM configured"
    else:
        try:
            rule = distill_with_llm(config=config, memories=contents, kind=cluster.kind)
        except LLMError as exc:
            cluster.fallback = f"LLM failed, used rules: {type(exc).__name__}: {str(exc)[:200]}"
            log.warning("distillation fell back to rules for %s: %s", cluster.member_ids, exc)
        except Exception as exc:  # an LLM problem must never crash the job
            cluster.fallback = f"LLM failed, used rules: {type(exc).__name__}"
            log.exception("distillation LLM call crashed; falling back to rules")
        else:
            if _clean_rule(cluster, content=rule.content, placard=rule.placard):
                cluster.producer = "llm"
                return
            cluster.fallback = "LLM answer was empty once cleaned, used rules"
    content, placard = distill_rules(contents=contents, placards=[m.placard for m in members])
    _clean_rule(cluster, content=content, placard=placard)
    cluster.producer = "rules"


def _clean_rule(cluster: DistillCluster, *, content: str, placard: str) -> bool:
    """The rule's text through the entrance every written text takes (forged protocol tags and control characters
    removed, secrets redacted): a model writes it, and a model can be talked into echoing a forged wrapper tag or a
    secret from its prompt. False when nothing is left of the content."""
    body = scrub_inbound_text(content)
    cue = scrub_inbound_text(placard, one_line=True)
    if not body.text:
        return False
    cluster.content, cluster.placard = body.text, cue.text[:PLACARD_MAX_CHARS]
    cluster.redacted = sorted({*body.types, *cue.types})
    return True


def distill_apply_cluster(*, cluster: DistillCluster, actor: Actor, now: datetime, config: LLMConfig | None) -> None:
    """Write the rule and supersede the members, in one transaction, or skip when a member changed meanwhile."""
    with transaction.atomic():
        members = list(
            Memory.objects.select_for_update(of=("self",))
            .select_related("slot")
            .filter(pk__in=cluster.member_ids)
            .order_by("created_at", "pk")
        )
        if len(members) != len(cluster.member_ids) or any(m.status != Memory.Status.ACTIVE for m in members):
            cluster.skipped = "a member changed since clustering"
            return
        # The LLM call happens with the rows locked, so nothing can supersede a member in the meantime; the
        # client's timeout and retries bound how long that is.
        _write_rule(cluster=cluster, members=members, config=config)
        seed = members[0]
        palace = Palace.objects.get(pk=cluster.palace_id)
        slot = slot_assign(palace=palace, kind=cluster.kind, actor=actor, inherit=seed.slot)
        try:
            vector: list[float] | None = embed_passages(
                [build_embedding_text(content=cluster.content, placard=cluster.placard)]
            )[0].tolist()
        except EmbedderUnavailable:
            vector = None  # the embedding backfill picks it up
        rule = Memory.objects.create(
            palace=palace,
            kind=cluster.kind,
            content=cluster.content,
            placard=cluster.placard,
            confidence=cluster.confidence,
            importance=max(m.importance for m in members),
            occurred_at=max(m.occurred_at for m in members),
            created_at=now,
            supersedes=seed,
            source_kind=Memory.Source.DISTILL,
            sources=[
                {
                    "kind": "distill",
                    "producer": cluster.producer,
                    "members": cluster.member_ids,
                    "system": actor.system,
                    "user_id": actor.user_id,
                    "at": now.isoformat(),
                }
            ],
            created_by_id=actor.user_id,
            redactions=sorted({r for m in members for r in m.redactions} | set(cluster.redacted)),
            search_text=build_search_text(content=cluster.content, placard=cluster.placard),
            embedding=vector,
            embedding_model=embedder_model_name() if vector is not None else "",
            slot=slot,
            review_enrolled=any(m.review_enrolled for m in members),
            version=max(m.version for m in members) + 1,
            meta={"distilled_from": cluster.member_ids, "producer": cluster.producer, "fallback": cluster.fallback},
        )
        claimed = Memory.objects.filter(pk__in=cluster.member_ids, status=Memory.Status.ACTIVE).update(
            status=Memory.Status.SUPERSEDED, version=F("version") + 1, updated_at=now
        )
        if claimed != len(members):  # cannot happen under the row locks; refuse rather than half-apply
            raise RuntimeError(f"distillation claimed {claimed} of {len(members)} members")
        Edge.objects.bulk_create(
            [Edge(palace=palace, from_memory=rule, to_memory=m, kind=Edge.Kind.SUPERSEDES, weight=1.0) for m in members]
        )
        # The rule speaks of what its members spoke of: it takes their entity links (each with the source by which a
        # member got it), so the entity cue and the Entities view find the rule rather than only superseded members.
        inherited = dict(
            MemoryEntity.objects.filter(memory_id__in=cluster.member_ids)
            .order_by("entity_id", "memory_id")
            .values_list("entity_id", "source")
        )
        MemoryEntity.objects.bulk_create(
            [
                MemoryEntity(palace=palace, memory=rule, entity_id=e, source=src, created_at=now)
                for e, src in inherited.items()
            ],
            ignore_conflicts=True,
        )
        oplog_write(
            op="memory.distill",
            actor=actor,
            palace=palace,
            target_kind="memory",
            target_id=rule.pk,
            reason=f"distilled {len(members)} same-topic {cluster.kind} memories into one rule ({cluster.producer})",
            detail={
                "members": cluster.member_ids,
                "producer": cluster.producer,
                "fallback": cluster.fallback,
                "min_similarity": cluster.min_similarity,
                "confidence": cluster.confidence,
                "confidence_rule": "max",
                "slot": slot.coordinate,
            },
        )
        for m in members:
            oplog_write(
                op="memory.supersede",
                actor=actor,
                palace=palace,
                target_kind="memory",
                target_id=m.pk,
                reason=f"distilled into #{rule.pk}",
                detail={"superseded_by": rule.pk, "from_status": "active"},
            )
        cluster.rule_id = rule.pk


def distill_run(
    *,
    mode: str = "suggest",
    palace: Palace | None = None,
    actor: Actor | None = None,
    now: datetime | None = None,
    llm: LLMConfig | str | None = "settings",
    preview_with_llm: bool = False,
) -> DistillResult:
    """Merge clusters of same-topic memories into higher-level rules.

    1. Cluster (see distill_clusters).
    2. `suggest`: propose each cluster with a preview of its rule — written by the extractive rules unless
       `preview_with_llm`, so a scheduled suggest run costs no LLM calls — and change nothing.
    3. `apply`: per cluster, in one transaction: lock the members, write the rule (the LLM when configured; on a
       malformed, failing or slow reply, the rules — the result says which), give it the seed's slot (a merge keeps
       its place), confidence = the members' maximum (a merged rule is as well attested as its best member),
       supersede every member (status superseded, `supersedes` → the oldest, a supersedes edge to each), op rows
       for the rule and each member. A second run finds nothing to merge.
    """
    if mode not in ("suggest", "apply"):
        raise ValueError(f"mode must be suggest or apply, not {mode!r}")
    now = now or timezone.now()
    actor = actor or Actor.for_system(DISTILL_JOB)
    config = llm_config("distill") if llm == "settings" else llm
    assert config is None or isinstance(config, LLMConfig)
    result = DistillResult(mode=mode, llm_configured=config is not None)
    # A member set a person rejected, or whose distillation was reverted (distill_revert), is not merged again.
    refused = {
        (palace_id, tuple(members))
        for palace_id, members in DistillProposal.objects.filter(status=DistillProposal.Status.REJECTED).values_list(
            "palace_id", "member_ids"
        )
    }
    for cluster in distill_clusters(palace=palace):
        if (cluster.palace_id, tuple(sorted(cluster.member_ids))) in refused:
            continue
        members = list(Memory.objects.filter(pk__in=cluster.member_ids).order_by("created_at", "pk"))
        cluster.confidence = max(m.confidence for m in members)
        if mode == "suggest":
            _write_rule(cluster=cluster, members=members, config=config if preview_with_llm else None)
            if config is not None and not preview_with_llm:
                cluster.fallback = "suggest preview (the LLM writes the rule when applied)"
        else:
            distill_apply_cluster(cluster=cluster, actor=actor, now=now, config=config)
        result.clusters.append(cluster)
    return result


# --- stored proposals ---------------------------------------------------------------------------------------------


def distill_proposals_store(*, result: DistillResult, now: datetime | None = None) -> list[DistillProposal]:
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
    """Apply a pending proposal with the same code as `memory_distill apply` (memory.distill_apply_cluster):
    the rule is written then (by the LLM when configured), the members superseded. Refused with Conflict, and left
    pending, when a member changed since it was proposed."""
    now = now or timezone.now()
    with transaction.atomic():
        proposal = _proposal_lock(proposal_id=proposal_id, actor=actor)
        members = list(Memory.objects.filter(pk__in=proposal.member_ids))
        cluster = DistillCluster(
            palace_id=proposal.palace_id,
            kind=proposal.kind,
            member_ids=list(proposal.member_ids),
            min_similarity=proposal.min_similarity,
            confidence=max((m.confidence for m in members), default=0.0),
        )
        distill_apply_cluster(cluster=cluster, actor=actor, now=now, config=llm_config("distill"))
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


# --- reverting a distillation -------------------------------------------------------------------------------------


@dataclass
class DistillRevert:
    rule: Memory
    restored: list[int] = field(default_factory=list)


def distill_revert(*, rule_id: int, actor: Actor, reason: str = "", now: datetime | None = None) -> DistillRevert:
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
    return DistillRevert(rule=rule, restored=member_ids)
