"""Bulk saves: many memories through the write pipeline (memory/save/pipeline.py) at once — a batch of up to 10 from a
door (`memory_save_batch`), an import merge (ops.portability), a capture of a session's turns. All of them call
`memory_save_bulk`, which differs from saving the items one by one in three ways:

1. the items go in chunks of MAX_BATCH_ITEMS (a backfill asks for larger ones): one embedder call and one
   entity-extraction ask per chunk;
2. the judge's model is not asked (a backfill would cost a model call per item, each under the palace's lock): the
   rules dispose, and the ruling behind every `contradicts` edge a bulk save opens is recorded as the rules', with
   the fallback `bulk` (memory.judge), so the Judge page can say why each edge exists;
3. items are written in order, each in its own savepoint, so a later item that restates an earlier one MERGEs into
   it (in-batch dedup) and one failing item is reported at its index without blocking the rest;
4. a chunk is written in one transaction (a savepoint when the caller has one open) holding the palace's lock from
   its first item to its last, so what a save asks per item is asked once per chunk and then kept here: the lock
   itself, the rooms and tour a slot is counted from (palace.slots.SlotAllocator), the previous memory of each
   session, and the neighbours of every item among the rows before the chunk (one statement); its new memories,
   edges, rulings, links and op rows are inserted at its end, one statement each (memory/save/pending.py, and
   `Deferred` in memory/save/pipeline.py). A failed item's savepoint rolls back its writes: the allocator reads
   afresh.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory.judge import Neighbour, adjudications_prune
from memory.knowledge import Extraction
from memory.models import Memory
from memory.save.derived_texts import derive_texts, embed_texts
from memory.save.input import Prepared, SaveItem, check_source, prepare_item
from memory.save.neighbours import nearest_many, nearest_scan_set
from memory.save.pending import PendingMemories
from memory.save.pipeline import (
    Deferred,
    SaveResult,
    dropped,
    extract_entities,
    lock_palace,
    previous_in_session,
    save_prepared,
)
from memory.save.tombstones import has_forgotten
from palace.actors import Actor
from palace.errors import InvalidInput
from palace.models import Palace
from palace.slots import SlotAllocator

log = logging.getLogger(__name__)

MAX_BATCH_ITEMS = 10  # a door's batch; and the chunk a bulk save embeds at once


@dataclass
class ItemError:
    index: int
    code: str
    message: str


@dataclass
class BatchResult:
    count: int  # items received
    items: list[SaveResult | ItemError]
    failed: int


def memory_save_batch(
    *,
    palace: Palace,
    actor: Actor,
    items: Sequence[SaveItem | Mapping[str, Any]],
    source: str = "rest",
    now: datetime | None = None,
) -> BatchResult:
    """A door's batch: up to MAX_BATCH_ITEMS items, saved by `memory_save_bulk` (one embedder call); each item gets
    its own disposition. An item is a SaveItem (a door validated it) or a mapping, made into a SaveItem here."""
    if not isinstance(items, Sequence) or isinstance(items, str) or not items:
        raise InvalidInput("items must be a non-empty list", field="items")
    if len(items) > MAX_BATCH_ITEMS:
        raise InvalidInput(f"a batch holds at most {MAX_BATCH_ITEMS} items (got {len(items)})", field="items")
    return memory_save_bulk(palace=palace, actor=actor, items=items, source=source, now=now)


def memory_save_bulk(
    *,
    palace: Palace,
    actor: Actor,
    items: Sequence[SaveItem | Mapping[str, Any]],
    source: str,
    now: datetime | None = None,
    chunk_items: int = MAX_BATCH_ITEMS,
) -> BatchResult:
    """Save any number of items as a bulk save (the module docstring); the result has one entry per item, in order:
    its SaveResult, or an ItemError at its index (an item that cannot be made into a SaveItem, or that failed).
    `chunk_items`: the items embedded in one embedder call (a backfill passes a whole batch: the in-process embedder
    is faster per text on a larger call, and the palace is locked only while the chunk is written)."""
    now = now or timezone.now()
    source = check_source(source)
    if not isinstance(items, Sequence) or isinstance(items, str):
        raise InvalidInput("items must be a list", field="items")
    step = max(1, chunk_items)
    results: list[SaveResult | ItemError] = []
    for start in range(0, len(items), step):
        chunk = items[start : start + step]
        results += _save_chunk(palace=palace, actor=actor, items=chunk, offset=start, source=source, now=now)
    return BatchResult(count=len(items), items=results, failed=sum(isinstance(r, ItemError) for r in results))


@dataclass
class Chunk:
    """A chunk's items made ready to write: cleaned (`prepared`, or a result already: invalid, dropped), their search
    and embedding texts, and their vectors once `memory_chunk_embed` ran. A backfill prepares and embeds its next
    batch while this one is written (capture/backfill/run.py); the embedder needs no database, so that can run on
    another thread."""

    offset: int
    now: datetime
    results: list[SaveResult | ItemError | None]
    prepared: list[tuple[int, Prepared]]
    texts: list[tuple[str, str]]
    # The context each session's first item was embedded with (the session's latest memory before the chunk), and
    # that memory where it was read here; a session whose context a caller gave is read again before writing.
    firsts: dict[str, tuple[int, str]] = field(default_factory=dict)
    previous: dict[str, Memory | None] = field(default_factory=dict)
    vectors: list[list[float] | None] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)
    embedded: bool = False


def memory_chunk_prepare(
    *,
    palace: Palace,
    items: Sequence[SaveItem | Mapping[str, Any]],
    now: datetime,
    offset: int = 0,
    context: Mapping[str, str] | None = None,
) -> Chunk:
    """Clean the items and derive their texts. The embedding text carries the previous turn of the same session:
    for a session's first item the session's latest memory (`context`: what the caller knows it will be once its
    earlier writes are done; it is checked before this chunk is written), for the next ones the item before."""
    results: list[SaveResult | ItemError | None] = [None] * len(items)
    prepared: list[tuple[int, Prepared]] = []
    for i, raw in enumerate(items):
        try:
            item = raw if isinstance(raw, SaveItem) else SaveItem.from_mapping(raw)
            p = prepare_item(item, now=now)
        except InvalidInput as exc:
            results[i] = ItemError(index=offset + i, code=exc.code, message=exc.message)
            continue
        if p.low_entropy:
            results[i] = dropped(p)
        else:
            prepared.append((i, p))
    chunk = Chunk(offset=offset, now=now, results=results, prepared=prepared, texts=[])
    last: dict[str, str] = {}
    for pos, (_, p) in enumerate(prepared):
        session = p.source_session
        if session and session not in last:
            if context is not None and session in context:
                last[session] = context[session]
            else:
                prev = chunk.previous[session] = previous_in_session(palace=palace, source_session=session)
                last[session] = prev.content if prev is not None else ""
            chunk.firsts[session] = (pos, last[session])
        chunk.texts.append(derive_texts(p, last.get(session, "")))
        if session:
            last[session] = p.content
    return chunk


def memory_chunk_embed(chunk: Chunk) -> Chunk:
    """The chunk's vectors, in one embedder call; touches no database (another thread may run it)."""
    if chunk.prepared and not chunk.embedded:
        chunk.vectors, chunk.degraded = embed_texts([embedding for _, embedding in chunk.texts])
    chunk.embedded = True
    return chunk


def _save_chunk(
    *,
    palace: Palace,
    actor: Actor,
    items: Sequence[SaveItem | Mapping[str, Any]],
    offset: int,
    source: str,
    now: datetime,
) -> list[SaveResult | ItemError]:
    chunk = memory_chunk_embed(memory_chunk_prepare(palace=palace, items=items, now=now, offset=offset))
    return memory_chunk_save(palace=palace, actor=actor, chunk=chunk, source=source)


def _recheck_context(*, palace: Palace, chunk: Chunk) -> None:
    """A session whose first item was prepared with a context the caller gave: read its latest memory now, and when
    it differs (the caller's earlier items merged or failed) derive that item's texts again, and embed it again if
    its embedding text changed, so both are exactly what a chunk prepared now would get. (The search text carries
    the context; the embedding text today does not, memory.text.build_embedding_text.)"""
    stale: list[int] = []
    for session, (pos, used) in chunk.firsts.items():
        if session in chunk.previous:
            continue
        prev = chunk.previous[session] = previous_in_session(palace=palace, source_session=session)
        actual = prev.content if prev is not None else ""
        if actual != used:
            before = chunk.texts[pos][1]
            chunk.texts[pos] = derive_texts(chunk.prepared[pos][1], actual)
            if chunk.texts[pos][1] != before:
                stale.append(pos)
    if stale and chunk.embedded and chunk.vectors:
        vectors, degraded = embed_texts([chunk.texts[pos][1] for pos in stale])
        for pos, vector in zip(stale, vectors, strict=True):
            chunk.vectors[pos] = vector
        chunk.degraded = sorted(set(chunk.degraded) | set(degraded))


def memory_chunk_save(*, palace: Palace, actor: Actor, chunk: Chunk, source: str) -> list[SaveResult | ItemError]:
    """Write a prepared chunk (points 2-4 of the module docstring); its results in item order."""
    results, prepared = chunk.results, chunk.prepared
    if not prepared:
        return [r for r in results if r is not None]
    _recheck_context(palace=palace, chunk=chunk)
    memory_chunk_embed(chunk)
    # Outside the transaction: a model may be asked, once for the chunk.
    extractions = extract_entities(palace, [p for _, p in prepared])
    # Forgotten memories cannot appear during the save: whether there are any to match is asked once for the chunk.
    forgotten = has_forgotten(palace=palace)
    # Point 3 costs a savepoint an item (two round trips). The chunk is written first without them, in one
    # savepoint; only when an item fails is it rolled back and written again item by item, each in its savepoint,
    # so the failing item is reported at its index and the rest are saved (the same rows as that pass alone gives).
    before = (list(results), dict(chunk.previous))
    try:
        with transaction.atomic():
            _write_items(
                palace=palace, actor=actor, chunk=chunk, source=source, ex=(extractions, forgotten), isolate=False
            )
    except Exception:
        log.info("a bulk chunk of palace %s failed; writing its items one at a time", palace.pk, exc_info=True)
        chunk.results[:], chunk.previous = before[0], dict(before[1])
        with transaction.atomic():
            _write_items(
                palace=palace, actor=actor, chunk=chunk, source=source, ex=(extractions, forgotten), isolate=True
            )
    return [r for r in chunk.results if r is not None]


def _write_items(
    *,
    palace: Palace,
    actor: Actor,
    chunk: Chunk,
    source: str,
    ex: tuple[list[Extraction], bool],
    isolate: bool,
) -> None:
    """The chunk's items in order inside the caller's transaction (point 4). Not `isolate`: no savepoint per item (an
    error propagates); `isolate`: each item in its savepoint, a failing one reported at its index."""
    results, prepared, now, offset, previous = chunk.results, chunk.prepared, chunk.now, chunk.offset, chunk.previous
    extractions, forgotten = ex
    slots = SlotAllocator(palace=palace, actor=actor, defer=not isolate, reserve=len(prepared))
    deferred = Deferred()
    pending = None if isolate else PendingMemories(reserve=len(prepared))
    lock_palace(palace)
    nearest_scan_set()
    # The neighbours each item has among the rows before the chunk, in one statement; the chunk's own memories are
    # added to them as they are made (pending). Not when a restore may bring a forgotten memory back mid-chunk.
    known: list[list[Neighbour] | None] = [None] * len(prepared)
    if pending is not None and not forgotten:
        known = list(nearest_many(palace=palace, vectors=chunk.vectors, status=Memory.Status.ACTIVE))
    for (i, p), (search_text, _), vector, extraction, mine_known in zip(
        prepared, chunk.texts, chunk.vectors, extractions, known, strict=True
    ):
        if forgotten and p.restore:
            # a restore writes its op row at once: the rows before it go first
            if pending is not None:
                pending.flush()
            deferred.flush(palace=palace, actor=actor, now=now)
        mine = Deferred()
        try:
            with transaction.atomic(savepoint=isolate):
                result = save_prepared(
                    palace=palace,
                    actor=actor,
                    p=p,
                    source=source,
                    vector=vector,
                    degraded=chunk.degraded,
                    search_text=search_text,
                    previous=previous.get(p.source_session) if p.source_session else None,
                    now=now,
                    extraction=extraction,
                    bulk=True,
                    forgotten=forgotten,
                    slots=slots,
                    deferred=mine,
                    pending=pending,
                    known=mine_known,
                )
        except Exception as exc:  # one bad item must not sink the batch; it is reported, never swallowed
            if not isolate:
                raise
            log.exception("bulk item %s failed", offset + i)
            code = getattr(exc, "code", "error")
            results[i] = ItemError(index=offset + i, code=str(code), message=str(getattr(exc, "message", exc)))
            slots.forget()  # its slot rows were rolled back (the chunk's lock, taken before, stays)
            continue
        deferred.extend(mine)
        results[i] = result
        if p.source_session and _inserted(result):
            previous[p.source_session] = result.memory  # the session's latest memory now
    if pending is not None:
        pending.flush()
    slots.flush()
    deferred.flush(palace=palace, actor=actor, now=now)
    adjudications_prune(palace=palace)  # once for the chunk, not after every item


def _inserted(result: SaveResult) -> bool:
    """Whether the save inserted a new memory (not a merge into, or a restore of, an existing one)."""
    return result.memory is not None and result.merged_into is None and result.forgotten is None
