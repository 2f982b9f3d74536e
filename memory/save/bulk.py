"""Bulk saves: many memories through the write pipeline (memory/save/pipeline.py) at once — a batch of up to 10 from a
door (`memory_save_batch`), an import merge (ops.portability), a capture of a session's turns. All of them call
`memory_save_bulk`, which differs from saving the items one by one in three ways:

1. the items go in chunks of MAX_BATCH_ITEMS (a backfill asks for larger ones): one embedder call and one
   entity-extraction ask per chunk;
2. the judge's model is not asked (a backfill would cost a model call per item, each under the palace's lock): the
   rules dispose, and the ruling behind every `contradicts` edge a bulk save opens is recorded as the rules', with
   the fallback `bulk` (memory.judge), so the Judge page can say why each edge exists;
3. items are written in order, each in its own savepoint, so a later item that restates an earlier one MERGEs into
   it (in-batch dedup) and one failing item is reported at its index without blocking the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory.save.derived_texts import derive_texts, embed_texts
from memory.save.input import Prepared, SaveItem, check_source, prepare_item
from memory.save.pipeline import SaveResult, dropped, extract_entities, previous_in_session, save_prepared
from memory.save.tombstones import has_forgotten
from palace.actors import Actor
from palace.errors import InvalidInput
from palace.models import Palace

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


def _save_chunk(
    *,
    palace: Palace,
    actor: Actor,
    items: Sequence[SaveItem | Mapping[str, Any]],
    offset: int,
    source: str,
    now: datetime,
) -> list[SaveResult | ItemError]:
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
    # Context (the previous turn) for the embedding text is only known for the first item of each session before
    # writing; later items of the same session in this chunk use the item before them.
    texts: list[tuple[str, str]] = []
    previous_content: dict[str, str] = {}
    for _, p in prepared:
        if p.source_session and p.source_session not in previous_content:
            prev = previous_in_session(palace=palace, source_session=p.source_session)
            previous_content[p.source_session] = prev.content if prev is not None else ""
        texts.append(derive_texts(p, previous_content.get(p.source_session, "")))
        if p.source_session:
            previous_content[p.source_session] = p.content
    vectors, degraded = embed_texts([embedding for _, embedding in texts]) if prepared else ([], [])
    # Outside the transaction: a model may be asked, once for the chunk.
    extractions = extract_entities(palace, [p for _, p in prepared]) if prepared else []
    # Forgotten memories cannot appear during the save: whether there are any to match is asked once for the chunk.
    forgotten = bool(prepared) and has_forgotten(palace=palace)
    for (i, p), (search_text, _), vector, extraction in zip(prepared, texts, vectors, extractions, strict=True):
        try:
            with transaction.atomic():
                results[i] = save_prepared(
                    palace=palace,
                    actor=actor,
                    p=p,
                    source=source,
                    vector=vector,
                    degraded=degraded,
                    search_text=search_text,
                    previous=previous_in_session(palace=palace, source_session=p.source_session),
                    now=now,
                    extraction=extraction,
                    bulk=True,
                    forgotten=forgotten,
                )
        except Exception as exc:  # one bad item must not sink the batch; it is reported, never swallowed
            log.exception("bulk item %s failed", offset + i)
            code = getattr(exc, "code", "error")
            results[i] = ItemError(index=offset + i, code=str(code), message=str(getattr(exc, "message", exc)))
    return [r for r in results if r is not None]
