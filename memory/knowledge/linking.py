"""Resolution and links: the mentions a memory's extraction found (memory/knowledge/extraction.py) made into links
to the palace's entities, inside the save transaction.

A mention whose normalised name equals an entity's key or one of its alias keys reuses that entity (and stamps
`last_mentioned_at`; an agent's aliases are added, and an agent's or model's kind replaces "other"); a miss creates
one — also when only one of its aliases names an existing entity ("Bob Lee" aka "Bob" beside "Bob"): the pair is
reported as ambiguous (`Linked.ambiguous`, the save's `entities_note`) for a merge, never folded in silently. A
failure is logged and reported (`Linked.error`), and the memory is saved all the same.

`entities_link` links one memory; `entities_link_many` the memories of a bulk save's chunk (memory/save/bulk.py) in
the order they were saved, with what `entities_link` asks per memory asked once: one locking select for every name
of the chunk, one insert of the new entities, one update of the changed ones, one insert of the links. Each memory
gets exactly what linking them one after the other gives (an entity an earlier memory created is reused by a later
one, and its tag shows the entity as it was then). Should the batch fail (a writer outside the palace's lock
created one of the names meanwhile: the unique key refuses the insert), its savepoint rolls back and the memories
are linked one at a time, each reporting its own failure.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.db.models import Q

from memory.knowledge.extraction import AGENT, MAX_MENTIONS, MODEL, EntityTag, Extraction, Linked, Mention
from memory.knowledge.rules import MAX_NAME_CHARS, normalise
from memory.models import Entity, MemoryEntity
from palace.models import Palace

__all__ = ["entities_link", "entities_link_many"]

log = logging.getLogger(__name__)


def _merged(mentions: list[Mention]) -> dict[str, Mention]:
    """One mention per key, in order (the agent's first); aliases of duplicates are pooled."""
    by_key: dict[str, Mention] = {}
    for m in mentions:
        key = normalise(m.name)
        if not key:
            continue
        if key in by_key:
            old = by_key[key]
            by_key[key] = Mention(old.name, old.kind, tuple(dict.fromkeys([*old.aliases, *m.aliases])), old.source)
        elif len(by_key) < MAX_MENTIONS:
            by_key[key] = m
    return by_key


@dataclass
class _Resolved:
    """One memory's resolution: its entities with who found them and their name and kind as it left them (a later
    memory of the batch may re-kind one), the entities it created, and the (created, existing) pairs one of the
    created one's aliases also names, as it left them."""

    links: list[tuple[Entity, str, str, str]] = field(default_factory=list)
    created: list[Entity] = field(default_factory=list)
    ambiguous: list[tuple[Entity, Entity]] = field(default_factory=list)
    named: dict[int, tuple[str, str]] = field(default_factory=dict)  # id(entity) -> (name, kind) as it left them


def _resolve(*, palace: Palace, mentions: Sequence[dict[str, Mention]], now: datetime) -> list[_Resolved]:
    """Resolve each memory's mentions, in order, against the palace's entities (locked) and the ones the earlier
    memories created; then write the new and the changed entities, one statement each. A mention's entity is the
    one its own name (key) names, as a name or an alias; else a new one. An alias alone never decides: {"name":
    "Bob Lee", "aliases": ["Bob"]} beside an existing "Bob" may be another Bob, so "Bob Lee" is created and the
    pair returned as ambiguous (the save's answer says so) instead of folding in."""
    keys = {k for ms in mentions for k in ms} | {
        normalise(a) for ms in mentions for m in ms.values() for a in m.aliases
    }
    keys.discard("")
    existing = list(
        Entity.objects.select_for_update()
        .filter(palace=palace, merged_into__isnull=True)
        .filter(Q(key__in=keys) | Q(alias_keys__overlap=list(keys)))
        .order_by("pk")
    )
    by_key: dict[str, Entity] = {}
    for entity in existing:  # a canonical name wins over an alias of another entity
        for alias in entity.alias_keys:
            by_key.setdefault(alias, entity)
    for entity in existing:
        by_key[entity.key] = entity
    out: list[_Resolved] = []
    new: list[Entity] = []
    touched: dict[int, Entity] = {}
    for ms in mentions:
        mine = _Resolved()
        for key, m in ms.items():
            alias_keys = [normalise(a) for a in m.aliases if normalise(a) and normalise(a) != key]
            found = by_key.get(key)
            if found is None:
                alias_hits = list({id(by_key[a]): by_key[a] for a in alias_keys if a in by_key}.values())
                entity = Entity(
                    palace=palace,
                    name=m.name[:MAX_NAME_CHARS],
                    kind=m.kind or Entity.Kind.OTHER,
                    key=key,
                    aliases=list(dict.fromkeys(a for a in m.aliases if normalise(a) != key)),
                    alias_keys=list(dict.fromkeys(alias_keys)),
                    created_at=now,
                    last_mentioned_at=now,
                )
                new.append(entity)
                mine.created.append(entity)
                mine.ambiguous.extend((entity, other) for other in alias_hits)
                for k in [key, *alias_keys]:
                    by_key.setdefault(k, entity)
            else:
                entity = found
                if _enrich(entity, m, key=key, alias_keys=alias_keys, now=now) and entity.pk is not None:
                    touched[entity.pk] = entity  # a new one is inserted as it stands at the end
            if all(e is not entity for e, *_ in mine.links):
                mine.links.append((entity, m.source, "", ""))
        # The tags show each entity as this memory left it (a later one may change its kind).
        mine.links = [(e, s, e.name, e.kind) for e, s, _, _ in mine.links]
        mine.named = {id(e): (e.name, e.kind) for pair in mine.ambiguous for e in pair}
        out.append(mine)
    if new:
        Entity.objects.bulk_create(new)  # PostgreSQL returns the ids
    if touched:
        Entity.objects.bulk_update(list(touched.values()), ["kind", "aliases", "alias_keys", "last_mentioned_at"])
    return out


def _enrich(entity: Entity, m: Mention, *, key: str, alias_keys: list[str], now: datetime) -> bool:
    """A reused entity: stamp the mention; an agent's aliases join its own, and a stated or model kind replaces
    "other". The rules never rename or re-kind an entity. Whether anything changed (a bulk save stamps many
    mentions with one `now`: the second one changes nothing and is not written)."""
    changed = False
    if entity.last_mentioned_at is None or entity.last_mentioned_at < now:
        entity.last_mentioned_at, changed = now, True
    if m.source in (AGENT, MODEL) and entity.kind == Entity.Kind.OTHER and m.kind != Entity.Kind.OTHER:
        entity.kind, changed = m.kind, True
    if m.source != AGENT:
        return changed
    names = [m.name, *m.aliases] if key != entity.key else list(m.aliases)
    for name in names:
        k = normalise(name)
        if k and k != entity.key and k not in entity.alias_keys:
            entity.aliases = [*entity.aliases, name]
            entity.alias_keys = [*entity.alias_keys, k]
            changed = True
    return changed


def _linked(extraction: Extraction, resolved: _Resolved | None = None) -> Linked:
    linked = Linked(by=extraction.by, fallback=extraction.fallback, error=extraction.error)
    if resolved is not None:
        linked.tags = [EntityTag(id=e.pk, name=n, kind=k, source=s) for e, s, n, k in resolved.links]
        linked.created = [e.pk for e in resolved.created]
        linked.ambiguous = [
            (_tag(new, resolved.named[id(new)]), _tag(old, resolved.named[id(old)])) for new, old in resolved.ambiguous
        ]
    return linked


def _tag(entity: Entity, named: tuple[str, str]) -> EntityTag:
    return EntityTag(id=entity.pk, name=named[0], kind=named[1])


def _links(*, palace: Palace, memory_id: int, resolved: _Resolved, now: datetime) -> list[MemoryEntity]:
    return [
        MemoryEntity(palace=palace, memory_id=memory_id, entity=e, source=s, created_at=now)
        for e, s, _, _ in resolved.links
    ]


def entities_link(*, palace: Palace, memory_id: int, extraction: Extraction, now: datetime) -> Linked:
    """Resolve the mentions and link them to the memory (a new one, or the one a restatement merged into), inside
    the caller's transaction and a savepoint of its own. Never raises: a failure is logged and reported."""
    mentions = _merged(extraction.mentions)
    if not mentions:
        return _linked(extraction)
    try:
        with transaction.atomic():
            (resolved,) = _resolve(palace=palace, mentions=[mentions], now=now)
            MemoryEntity.objects.bulk_create(
                _links(palace=palace, memory_id=memory_id, resolved=resolved, now=now), ignore_conflicts=True
            )
    except Exception as exc:  # a failed resolution never blocks the write
        log.exception("linking the entities of memory %s failed", memory_id)
        return Linked(by=extraction.by, fallback=extraction.fallback, error=f"resolution failed: {exc}"[:200])
    return _linked(extraction, resolved)


def entities_link_many(*, palace: Palace, links: Sequence[tuple[int, Extraction]], now: datetime) -> list[Linked]:
    """`entities_link` for many (memory id, extraction) pairs in the order the memories were saved (the module
    docstring), one Linked each. A memory may appear more than once (later restatements merged into it); its links
    are then pooled, the first finder's source kept. Never raises."""
    mentions = [_merged(extraction.mentions) for _, extraction in links]
    if not any(mentions):
        return [_linked(extraction) for _, extraction in links]
    try:
        with transaction.atomic():
            resolved = _resolve(palace=palace, mentions=mentions, now=now)
            rows: dict[tuple[int, int | None], MemoryEntity] = {}
            for (memory_id, _), mine in zip(links, resolved, strict=True):
                for row in _links(palace=palace, memory_id=memory_id, resolved=mine, now=now):
                    rows.setdefault((memory_id, row.entity.pk), row)
            # ignore_conflicts: a merge target may already be linked to an entity (the one-at-a-time path too).
            MemoryEntity.objects.bulk_create(list(rows.values()), ignore_conflicts=True)
    except Exception:
        log.info("linking the entities of %s memories at once failed; one at a time", len(links), exc_info=True)
        return [entities_link(palace=palace, memory_id=m, extraction=ex, now=now) for m, ex in links]
    return [_linked(extraction, mine) for (_, extraction), mine in zip(links, resolved, strict=True)]
