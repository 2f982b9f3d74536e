"""The save pipeline behind every door (DESIGN.md, "The write pipeline"): one memory (many: memory/save/bulk.py).

A save request is a typed `SaveItem`, its field types checked once where it is made (a batch item that arrives as a
mapping becomes one in `SaveItem.from_mapping`). After that: clean and redact (`prepare_item`, memory/save/input.py),
derive the search and embedding texts and embed (memory/save/derived_texts.py), dispose against the nearest
neighbours (memory/save/neighbours.py; the forgotten too: memory/save/tombstones.py), then slot, link and log in one
transaction. Corrections (memory/lifecycle/corrections.py) reuse the same cleaning, embedding and insert."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memory.judge import (
    ACCEPT,
    DEFER,
    DROP,
    MERGE,
    Disposition,
    Judged,
    Neighbour,
    adjudication_rows,
    adjudications_record,
    adjudications_write,
    describe,
    judge_dispose,
    save_hint,
)
from memory.knowledge import Extraction, Linked, Note, entities_extract_many, entities_link, entities_link_many
from memory.models import Adjudication, Edge, Memory
from memory.providers import embedder_model_name
from memory.save.derived_texts import derive_texts, embed_texts
from memory.save.importance import importance_for
from memory.save.input import Prepared, SaveItem, check_source, prepare_item
from memory.save.neighbours import nearest
from memory.save.pending import PendingMemories
from memory.save.tombstones import tombstone_check
from palace.actors import Actor
from palace.kinds import KindName
from palace.models import Palace
from palace.oplog import OpEntry, oplog_write, oplog_write_many
from palace.slots import SlotAllocator, slot_assign

# Sources that bring old material in bulk: not enrolled for spaced review by default.
NO_REVIEW_SOURCES = frozenset({"backfill", "import", "eval"})
CONFIDENCE_MERGE_STEP = 0.05


@dataclass
class SaveResult:
    disposition: str  # accept | merge | defer | drop
    memory: Memory | None  # the new memory, or the one a restatement merged into; None on DROP
    merged_into: int | None = None
    contradicts: list[int] = field(default_factory=list)
    edges: list[int] = field(default_factory=list)  # the pending `contradicts` edges, one per contradicted memory
    redactions: list[str] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)
    hint: str = ""
    forgotten: int | None = None  # a forgotten memory the content restates (memory/save/tombstones.py)
    restored: bool = False  # ...which this save restored (restore: true) instead of saving a copy
    entities: Linked | None = (
        None  # the entities linked to `memory` (memory/knowledge/extraction.py), and who found them
    )


@dataclass
class Deferred:
    """A bulk save's writes that wait for the end of its chunk (memory/save/bulk.py): its op rows, in the order the
    saves made them, its edges (`next`, and `contradicts` ones with ids reserved up front), its rulings, and its
    entity links; one insert each (an insert per row cost more than the
    row). Nothing in a save reads them back, and they commit or roll back with the chunk like the rows they describe.
    A deferred link is a Linked filled in when the chunk's links are written (memory.knowledge.entities_link_many),
    before the op rows whose detail records it."""

    ops: list[tuple[str, OpEntry]] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    links: list[tuple[int, Extraction, Linked, list[dict[str, Any]]]] = field(default_factory=list)
    rulings: list[Adjudication] = field(default_factory=list)

    def op(self, op: str, *, actor: Actor, entry: OpEntry, linked: Linked | None = None) -> None:
        """An op row; `linked` (a deferred link): its detail's "entities" is filled in with the link."""
        if self is _NOT_DEFERRED:
            oplog_write(op=op, actor=actor, **vars(entry))
            return
        self.ops.append((op, entry))
        for _, _, pending, details in self.links:
            if pending is linked and entry.detail is not None:
                details.append(entry.detail)

    def link(self, *, palace: Palace, memory_id: int, extraction: Extraction, now: datetime) -> Linked:
        """The memory's entities: linked at once, or (deferred) a Linked filled in at the end of the chunk."""
        if self is _NOT_DEFERRED:
            return entities_link(palace=palace, memory_id=memory_id, extraction=extraction, now=now)
        pending = Linked(by=extraction.by, fallback=extraction.fallback, error=extraction.error)
        self.links.append((memory_id, extraction, pending, []))
        return pending

    def extend(self, other: Deferred) -> None:
        self.ops += other.ops
        self.edges += other.edges
        self.links += other.links
        self.rulings += other.rulings

    def flush(self, *, palace: Palace, actor: Actor, now: datetime) -> None:
        """Write what waits (inside the chunk's transaction): the links first (the op rows record them), then the
        edges, then the op rows in their order, one insert per run of one op."""
        if self.links:
            done = entities_link_many(palace=palace, links=[(m, ex) for m, ex, _, _ in self.links], now=now)
            for (_, _, pending, details), linked in zip(self.links, done, strict=True):
                vars(pending).update(vars(linked))
                for detail in details:
                    detail["entities"] = linked.detail()
        if self.edges:
            Edge.objects.bulk_create(self.edges)
        if self.rulings:
            adjudications_write(palace=palace, rows=self.rulings)
        for op, run in itertools.groupby(self.ops, key=lambda pair: pair[0]):
            oplog_write_many(op=op, actor=actor, entries=[entry for _, entry in run])
        self.ops, self.edges, self.links, self.rulings = [], [], [], []


_NOT_DEFERRED = Deferred()  # one save (not a bulk one): its rows are written at once


# --- cleaning (memory/save/input.py), provenance, embedding --------------------------------------------------------


def _provenance(*, p: Prepared, source: str, actor: Actor, now: datetime) -> dict[str, Any]:
    """One entry of Memory.sources: where a piece of content came from, stamped from the Actor, never the client."""
    return {
        "kind": source,
        "session": p.source_session,
        "turn": p.source_turn,
        "seq": p.source_seq,
        "speaker": p.speaker,
        "user_id": actor.user_id,
        "token_id": actor.token_id,
        "system": actor.system,
        "at": now.isoformat(),
    }


def previous_in_session(*, palace: Palace, source_session: str) -> Memory | None:
    """The latest memory of the same palace and source session (the turn before this one), if any."""
    if not source_session:
        return None
    return (
        Memory.objects.filter(palace=palace, source_session=source_session)
        .only("id", "content", "kind")
        .order_by("-id")
        .first()
    )


# --- disposition -------------------------------------------------------------------------------------------------


def _merge(
    *,
    target_id: int,
    p: Prepared,
    source: str,
    actor: Actor,
    similarity: float,
    now: datetime,
    entities: Linked,
    palace: Palace,
    deferred: Deferred,
    pending: PendingMemories | None = None,
) -> Memory:
    """Reinforce an existing memory with a restatement: confidence up, a hit, the new provenance kept, the
    restatement's entities linked to it. A memory of the same bulk chunk not inserted yet (`pending`) is
    reinforced in place and inserted so."""
    held = pending.get(target_id) if pending is not None else None
    target = held if held is not None else Memory.objects.select_for_update().get(pk=target_id)
    target.confidence = min(1.0, round(target.confidence + CONFIDENCE_MERGE_STEP, 6))
    target.hit_count += 1
    target.last_accessed_at = now
    target.sources = [*target.sources, _provenance(p=p, source=source, actor=actor, now=now)]
    if p.redactions:
        target.redactions = sorted(set(target.redactions) | set(p.redactions))
    if held is None:
        target.save(
            update_fields=["confidence", "hit_count", "last_accessed_at", "sources", "redactions", "updated_at"]
        )
    deferred.op(
        "memory.merge",
        actor=actor,
        entry=OpEntry(
            palace=palace,  # the target is one of this palace's neighbours (memory/save/neighbours.py)
            target_kind="memory",
            target_id=target.pk,
            reason="restatement of an existing memory",
            detail={
                "disposition": MERGE,
                "similarity": round(similarity, 4),
                "source": source,
                "session": p.source_session,
                "turn": p.source_turn,
                "redactions": p.redactions,
                "confidence": target.confidence,
                "entities": entities.detail(),
            },
        ),
        linked=entities,
    )
    return target


def create_memory(
    *,
    palace: Palace,
    p: Prepared,
    source: str,
    actor: Actor,
    vector: list[float] | None,
    search_text: str,
    now: datetime,
    supersedes: Memory | None = None,
    slots: SlotAllocator | None = None,
    pending: PendingMemories | None = None,
) -> Memory:
    """Insert the memory, slotted (a correction inherits its predecessor's slot). A new memory's importance is the
    caller's or the rule's (memory/save/importance.py); one that starts below the decay threshold is not enrolled for
    review unless asked, so it may fade (memory/jobs/decay.py). `slots`: a bulk save's allocator for its chunk;
    `pending`: its held memories (memory/save/pending.py), where this one waits for the chunk's insert."""
    importance = importance_for(kind=p.kind, content=p.content, explicit=p.importance).value
    if p.enrol_review is not None:
        enrolled = p.enrol_review
    else:
        enrolled = bool(settings.ATRIUM_REVIEW_ENROL) and source not in NO_REVIEW_SOURCES
        enrolled = enrolled and (supersedes is not None or importance >= settings.ATRIUM_DECAY_IMPORTANCE_BELOW)
    if slots is not None and supersedes is None:
        slot = slots.assign(p.kind)
    else:
        slot = slot_assign(
            palace=palace, kind=p.kind, actor=actor, inherit=supersedes.slot if supersedes is not None else None
        )
    memory = Memory(
        palace=palace,
        kind=p.kind,
        content=p.content,
        placard=p.placard,
        occurred_at=p.occurred_at,
        created_at=now,
        source_kind=source,
        source_session=p.source_session,
        source_turn=p.source_turn,
        source_seq=p.source_seq,
        sources=[_provenance(p=p, source=source, actor=actor, now=now)],
        speaker=p.speaker,
        created_by_id=actor.user_id,
        created_by_token_id=actor.token_id,
        redactions=p.redactions,
        search_text=search_text,
        embedding=vector,
        embedding_model=embedder_model_name() if vector is not None else "",
        slot=slot,
        review_enrolled=enrolled,
        supersedes=supersedes,
    )
    memory.importance = importance
    if p.confidence is not None:
        memory.confidence = p.confidence
    if supersedes is not None:
        memory.confidence = supersedes.confidence
        memory.importance = supersedes.importance if p.importance is None else p.importance
        memory.version = supersedes.version + 1
    if pending is not None:
        memory.id = pending.next_id()
        pending.add(memory, vector)
    else:
        memory.save()
    return memory


def lock_palace(palace: Palace) -> None:
    """Serialise writers of one palace, so two identical saves cannot both be ACCEPTed."""
    Palace.objects.select_for_update(no_key=True).filter(pk=palace.pk).values_list("pk", flat=True).first()


def save_prepared(
    *,
    palace: Palace,
    actor: Actor,
    p: Prepared,
    source: str,
    vector: list[float] | None,
    degraded: list[str],
    search_text: str,
    previous: Memory | None,
    now: datetime,
    extraction: Extraction,
    bulk: bool = False,
    forgotten: bool = True,
    slots: SlotAllocator | None = None,
    deferred: Deferred | None = None,
    pending: PendingMemories | None = None,
    known: list[Neighbour] | None = None,
) -> SaveResult:
    """Steps 5-6 of the pipeline, inside one transaction: dispose, write, slot, link (edges, entities), op row.
    `bulk` (memory/save/bulk.py): the rules dispose alone and their rulings are recorded labelled `bulk`.
    `forgotten` False: the caller knows the palace has no forgotten memory with a vector, so there is no tombstone
    to look for (a bulk save asks once for its chunk instead of twice an item).
    `slots` (a bulk save's chunk): the caller holds the palace lock for the chunk and a savepoint around this item,
    so neither is taken again here, and the slots come from the chunk's allocator; it has also set the neighbour
    scan for its transaction (memory/save/neighbours.py). `deferred` (a bulk save's): the op rows and `next` edges
    wait there for the end of the chunk; `pending` (a bulk save's): its new memories too (memory/save/pending.py),
    and `known`: this item's neighbours among the rows before the chunk, asked for the whole chunk at once
    (memory/save/neighbours.py `nearest_many`); the held memories are added to them, or to what `nearest` finds."""
    deferred = deferred if deferred is not None else _NOT_DEFERRED
    with transaction.atomic(savepoint=slots is None):
        if slots is None:
            lock_palace(palace)
        judged = Judged(Disposition(ACCEPT))
        if vector is not None:
            if known is None:
                known = nearest(palace=palace, vector=vector, status=Memory.Status.ACTIVE, scan_set=slots is not None)
            neighbours = pending.nearest(vector=vector, found=known) if pending is not None else known
            judged = judge_dispose(content=p.content, kind=p.kind, speaker=p.speaker, neighbours=neighbours, bulk=bulk)
        decision = judged.disposition
        if decision.merge_into is not None:
            linked = deferred.link(palace=palace, memory_id=decision.merge_into.id, extraction=extraction, now=now)
            target = _merge(
                target_id=decision.merge_into.id,
                p=p,
                source=source,
                actor=actor,
                similarity=decision.merge_into.similarity,
                now=now,
                entities=linked,
                palace=palace,
                deferred=deferred,
                pending=pending,
            )
            _rulings(palace=palace, judged=judged, new_memory=None, text=p.content, edges={}, deferred=deferred)
            hint = f"restates {describe(decision.merge_into)}; reinforced it instead of saving a copy"
            return SaveResult(
                disposition=MERGE,
                memory=target,
                merged_into=target.pk,
                redactions=p.redactions,
                degraded=degraded,
                hint=save_hint(judged, {}) if judged.rulings else hint,
                entities=linked,
            )
        tomb = (
            None
            if vector is None or not forgotten
            else tombstone_check(palace=palace, p=p, vector=vector, actor=actor, now=now)
        )
        if tomb is not None:
            return SaveResult(
                disposition=MERGE if tomb.restored else DEFER,
                memory=tomb.memory if tomb.restored else None,
                merged_into=tomb.memory.pk if tomb.restored else None,
                redactions=p.redactions,
                degraded=degraded,
                hint=tomb.hint,
                forgotten=tomb.memory.pk,
                restored=tomb.restored,
            )
        memory = create_memory(
            palace=palace,
            p=p,
            source=source,
            actor=actor,
            vector=vector,
            search_text=search_text,
            now=now,
            slots=slots,
            pending=pending,
        )
        linked = deferred.link(palace=palace, memory_id=memory.pk, extraction=extraction, now=now)
        contradicting = [
            Edge(
                palace=palace,
                from_memory=memory,
                to_memory_id=suspect.id,
                kind=Edge.Kind.CONTRADICTS,
                status=Edge.Status.PENDING,
                weight=round(suspect.similarity, 4),
            )
            for suspect in decision.contradicts
        ]
        if pending is not None and contradicting:  # a bulk chunk's: ids now, one insert at its end
            for edge in contradicting:
                edge.id = pending.next_id(Edge)
            deferred.edges += contradicting
        elif contradicting:  # one insert for all of them (PostgreSQL returns the ids of a bulk insert)
            contradicting = Edge.objects.bulk_create(contradicting)
        edges = {suspect.id: edge for suspect, edge in zip(decision.contradicts, contradicting, strict=True)}
        _rulings(palace=palace, judged=judged, new_memory=memory, text=p.content, edges=edges, deferred=deferred)
        if previous is not None and p.kind == Memory.Kind.EPISODE:
            # `memory` was inserted just now, so no edge can point to it yet: a plain insert, no get-or-create.
            edge = Edge(palace=palace, from_memory=previous, to_memory=memory, kind=Edge.Kind.NEXT, weight=1.0)
            if deferred is _NOT_DEFERRED:
                edge.save()
            else:
                deferred.edges.append(edge)
        hint = save_hint(judged, edges)
        if degraded:
            hint = (hint + "; " if hint else "") + "saved without an embedding (embedder unavailable)"
        contradicts = [n.id for n in decision.contradicts]
        deferred.op(
            "memory.save",
            actor=actor,
            entry=OpEntry(
                palace=palace,
                target_kind="memory",
                target_id=memory.pk,
                detail={
                    "disposition": decision.disposition,
                    "kind": p.kind,
                    "source": source,
                    "slot": memory.slot.coordinate if memory.slot is not None else None,
                    "redactions": p.redactions,
                    "contradicts": contradicts,
                    "edges": [e.pk for e in edges.values()],
                    "judged_by": sorted({"model" if r.model_took_part else "rules" for r in judged.rulings}),
                    "degraded": degraded,
                    "importance": memory.importance,
                    "entities": linked.detail(),
                },
            ),
            linked=linked,
        )
    return SaveResult(
        disposition=decision.disposition,
        memory=memory,
        contradicts=contradicts,
        edges=[e.pk for e in edges.values()],
        redactions=p.redactions,
        degraded=degraded,
        hint=hint,
        entities=linked,
    )


def _rulings(
    *, palace: Palace, judged: Judged, new_memory: Memory | None, text: str, edges: dict[int, Edge], deferred: Deferred
) -> None:
    """The save's rulings: written now (and pruned), or, in a bulk chunk, with the chunk's other rows at its end
    (the chunk prunes once)."""
    if deferred is _NOT_DEFERRED:
        adjudications_record(palace=palace, judged=judged, new_memory=new_memory, new_text=text, edges=edges)
    else:
        deferred.rulings += adjudication_rows(
            palace=palace, judged=judged, new_memory=new_memory, new_text=text, edges=edges
        )


def dropped(p: Prepared) -> SaveResult:
    # A DROP changes nothing, so it writes no op row: the ledger records mutations, and a chatty client must not
    # be able to fill it with "ok"s. The caller learns the disposition from the result.
    return SaveResult(
        disposition=DROP,
        memory=None,
        redactions=p.redactions,
        hint="dropped: no information to remember (an acknowledgement, too short, or repetitive)",
    )


# --- the entry point (many at once: memory/save/bulk.py) --------------------------------------------------------------


def memory_save(
    *,
    palace: Palace,
    actor: Actor,
    content: str,
    kind: KindName,
    placard: str = "",
    source: str = "rest",
    occurred_at: datetime | None = None,
    speaker: str = "",
    source_session: str = "",
    source_turn: str = "",
    source_seq: int | None = None,
    importance: float | None = None,
    enrol_review: bool | None = None,
    restore: bool = False,
    entities: object = None,
    now: datetime | None = None,
) -> SaveResult:
    """Save one memory through the write pipeline (DESIGN.md, "The write pipeline").

    1. strip forged protocol tags and NUL/control characters; validate kind, length, placard;
    2. redact secrets and personal data (the result and the op row carry the types, never the values);
    3. DROP low-entropy content (no row, no op row);
    4. embed the passage text (on failure: no vector, degraded ["embedder"], ACCEPT);
    5. dispose against the nearest active memories of the same palace: MERGE / DEFER / ACCEPT; content restating a
       forgotten memory is DEFERred with its epitaph, or restores it when `restore` (memory/save/tombstones.py);
    6. slot, enrol for review, link the previous turn of the same session and the entities it mentions (`entities`:
       the ones the agent states, [{name, kind?, aliases?}]; memory/knowledge/extraction.py), write the op row — one
       transaction.

    The caller has already resolved `palace` for writing through palace.selectors.palace_get(write=True).
    """
    now = now or timezone.now()
    source = check_source(source)
    item = SaveItem(
        content=content,
        kind=kind,
        placard=placard,
        occurred_at=occurred_at,
        speaker=speaker,
        source_session=source_session,
        source_turn=source_turn,
        source_seq=source_seq,
        importance=importance,
        enrol_review=enrol_review,
        restore=restore,
        entities=entities,
    )
    p = prepare_item(item, now=now)
    if p.low_entropy:
        return dropped(p)
    previous = previous_in_session(palace=palace, source_session=p.source_session)
    search_text, embedding_text = derive_texts(p, previous.content if previous is not None else "")
    vectors, degraded = embed_texts([embedding_text])
    return save_prepared(
        palace=palace,
        actor=actor,
        p=p,
        source=source,
        vector=vectors[0],
        degraded=degraded,
        search_text=search_text,
        previous=previous,
        now=now,
        extraction=extract_entities(palace, [p])[0],
    )


def extract_entities(palace: Palace, prepared: Sequence[Prepared]) -> list[Extraction]:
    """The entity mentions of prepared items, found before the save transaction: one model ask for a batch."""
    notes = [Note(text=p.content, speaker=p.speaker, stated=p.entities) for p in prepared]
    return entities_extract_many(palace=palace, notes=notes)
