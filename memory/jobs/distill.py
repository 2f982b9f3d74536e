"""The jobs that keep a palace healthy: decay, embedding backfill, distillation and slot backfill.

Each is a plain service (Celery tasks in memory/tasks.py and the management commands are thin doors over them),
and each is idempotent: rows are claimed with a conditional UPDATE that re-checks the condition that selected
them, so a second run — or two workers at once — changes nothing that the first already changed.
"""

from __future__ import annotations

import logging
import os
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from memory.jobs.decay import DECAY_JOB, DecayResult, decay_run
from memory.models import DistillProposal, Edge, Memory, MemoryEntity
from memory.providers import embeddings
from memory.providers.embeddings import EmbedderUnavailable, embed_passages, embedder_model_name
from memory.providers.llm import LLMConfig, LLMError, distill_with_llm
from memory.text.searchtext import build_embedding_text, build_search_text
from palace.actors import Actor
from palace.models import Palace
from palace.oplog import oplog_write
from palace.slots import slot_assign

log = logging.getLogger(__name__)

__all__ = ["DECAY_JOB", "DecayResult", "decay_run"]  # decay lives in memory/jobs/decay.py; kept importable from here

BACKFILL_JOB = "embeddings-backfill"
DISTILL_JOB = "distill"
SLOTS_JOB = "slots-backfill"


def _palaces(ids: set[int]) -> dict[int, Palace]:
    return {p.pk: p for p in Palace.objects.filter(pk__in=ids)}


# --- embedding backfill --------------------------------------------------------------------------------------------


@dataclass
class BackfillResult:
    embedded: int = 0
    remaining: int = 0  # rows still without a vector after this run (what health reports)
    degraded: str = ""  # why the run stopped early ("" when it did not)
    model: str = ""
    memory_ids: list[int] = field(default_factory=list)


def _missing_vectors() -> QuerySet[Memory]:
    # The same population ops/health.py counts as without_vector: everything but forgotten memories.
    return Memory.objects.exclude(status=Memory.Status.FORGOTTEN).filter(embedding__isnull=True)


def embeddings_backfill(
    *, batch_size: int = 32, limit: int | None = None, actor: Actor | None = None
) -> BackfillResult:
    """Give every memory saved while the embedder was down its vector, in batches, oldest first.

    Each row is written only if it still has no vector (a conditional UPDATE), so concurrent runs cannot clash
    and a second run does nothing. One op row per palace touched, with the worker's pid and the moment this
    process loaded its embedder (so a run can show the model was loaded once per process).
    """
    actor = actor or Actor.for_system(BACKFILL_JOB)
    result = BackfillResult()
    last_pk = 0
    done: dict[int, list[int]] = {}
    while limit is None or result.embedded < limit:
        take = batch_size if limit is None else min(batch_size, limit - result.embedded)
        batch = list(
            _missing_vectors()
            .filter(pk__gt=last_pk)
            .order_by("pk")
            .only("pk", "palace_id", "content", "placard", "speaker", "occurred_at")[:take]
        )
        if not batch:
            break
        last_pk = batch[-1].pk
        texts = [
            build_embedding_text(content=m.content, placard=m.placard, speaker=m.speaker, occurred_at=m.occurred_at)
            for m in batch
        ]
        try:
            vectors = embed_passages(texts)
        except EmbedderUnavailable as exc:
            result.degraded = f"embedder unavailable: {exc}"
            log.warning("embedding backfill stopped: %s", exc)
            break
        result.model = embedder_model_name()
        for memory, vector in zip(batch, vectors, strict=True):
            claimed = Memory.objects.filter(pk=memory.pk, embedding__isnull=True).update(
                embedding=vector.tolist(), embedding_model=result.model
            )
            if claimed:
                done.setdefault(memory.palace_id, []).append(memory.pk)
                result.embedded += 1
                result.memory_ids.append(memory.pk)
    if done:
        palaces = _palaces(set(done))
        loaded_at = getattr(getattr(embeddings, "_state", None), "loaded_at", None)
        with transaction.atomic():
            for palace_id, ids in done.items():
                oplog_write(
                    op="embeddings.backfill",
                    actor=actor,
                    palace=palaces[palace_id],
                    target_kind="palace",
                    target_id=palace_id,
                    reason=f"embedded {len(ids)} memories saved without a vector",
                    detail={
                        "count": len(ids),
                        "memory_ids": ids[:200],
                        "model": result.model,
                        "pid": os.getpid(),
                        "embedder_loaded_at": loaded_at,
                    },
                )
    result.remaining = _missing_vectors().count()
    return result


# --- distillation --------------------------------------------------------------------------------------------------

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


@dataclass
class DistillResult:
    mode: str  # "suggest" or "apply"
    llm_configured: bool
    clusters: list[DistillCluster] = field(default_factory=list)

    @property
    def applied(self) -> int:
        return sum(1 for c in self.clusters if c.rule_id is not None)


def llm_config_from_settings() -> LLMConfig | None:
    """The distillation LLM from settings (ATRIUM_LLM_BASE_URL/_API_KEY/_MODEL), or None when not configured."""
    try:
        return LLMConfig.from_env(
            {
                "ATRIUM_LLM_BASE_URL": settings.ATRIUM_LLM_BASE_URL or "",
                "ATRIUM_LLM_API_KEY": settings.ATRIUM_LLM_API_KEY or "",
                "ATRIUM_LLM_MODEL": settings.ATRIUM_LLM_MODEL or "",
            }
        )
    except ValueError as exc:
        log.warning("LLM configuration ignored: %s", exc)
        return None


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
            cluster.content, cluster.placard, cluster.producer = rule.content, rule.placard, "llm"
            return
    cluster.content, cluster.placard = distill_rules(contents=contents, placards=[m.placard for m in members])
    cluster.producer = "rules"


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
            redactions=sorted({r for m in members for r in m.redactions}),
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
    config = llm_config_from_settings() if llm == "settings" else llm
    assert config is None or isinstance(config, LLMConfig)
    result = DistillResult(mode=mode, llm_configured=config is not None)
    # A member set a person rejected, or whose distillation was undone (memory.versions), is not merged again.
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


# --- slot backfill -------------------------------------------------------------------------------------------------


def slots_backfill(*, palace: Palace | None = None, actor: Actor | None = None) -> int:
    """Pin every memory that has no slot (older data, bulk loads) to one, oldest first, so it joins the palace.

    A correction whose predecessor has a slot inherits it. Idempotent: a row is slotted only while it has none.
    One op row per palace touched. Returns how many memories were slotted.
    """
    actor = actor or Actor.for_system(SLOTS_JOB)
    qs = Memory.objects.filter(slot__isnull=True)
    if palace is not None:
        qs = qs.filter(palace=palace)
    counts: Counter[int] = Counter()
    for pk in qs.order_by("created_at", "pk").values_list("pk", flat=True):
        with transaction.atomic():
            row = (
                Memory.objects.select_for_update(of=("self",))
                .select_related("palace", "supersedes__slot")
                .filter(pk=pk, slot__isnull=True)
                .first()
            )
            if row is None:
                continue
            inherit = row.supersedes.slot if row.supersedes is not None else None
            row.slot = slot_assign(palace=row.palace, kind=row.kind, actor=actor, inherit=inherit)
            Memory.objects.filter(pk=pk).update(slot=row.slot)
        counts[row.palace_id] += 1
    if counts:
        palaces = _palaces(set(counts))
        with transaction.atomic():
            for palace_id, n in counts.items():
                oplog_write(
                    op="slots.backfill",
                    actor=actor,
                    palace=palaces[palace_id],
                    target_kind="palace",
                    target_id=palace_id,
                    reason=f"slotted {n} memories that had no place",
                    detail={"count": n},
                )
    return sum(counts.values())
