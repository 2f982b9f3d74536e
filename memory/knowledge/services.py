"""Curating a palace's entities by hand: merge two into one, rename one, edit its aliases, change its kind.
Extraction and resolution at write time are memory.knowledge.extraction' job; these are the writer's corrections on
top of it (the Entities view and REST call the same functions).

Only owners and editors of the entity's palace may do these (viewers get PermissionDenied, non-members NotFound,
exactly as for an entity that does not exist). Every function writes its op-log row in the same transaction as the
change it records. A merged entity keeps its row with `merged_into` set and cannot be edited any more.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q

from memory.knowledge.rules import name_key
from memory.models import Entity, Fact, MemoryEntity
from memory.text import clean_line
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound
from palace.oplog import oplog_write
from palace.selectors import palace_get

MAX_NAME = 200
MAX_ALIASES_PER_CALL = 50
MAX_REASON = 500
REMOVE_UNKNOWN = "an alias to remove is not one of this entity's aliases (see `alias` and `aliases`)"
MERGE_ITSELF = "an entity cannot be merged into itself"
MERGE_PALACES = "both entities must be in the same palace"


def _clean_name(raw: str, what: str) -> tuple[str, str]:
    """A name as written (whitespace collapsed) and its key; InvalidInput when it is empty or too long."""
    if not isinstance(raw, str):
        raise InvalidInput(f"{what} must be text", field=what)
    # Forged protocol tags and control bytes (NUL cannot be stored) go, as in every other line a person writes.
    name = clean_line(unicodedata.normalize("NFKC", raw), what, MAX_NAME)
    key = name_key(name)
    if not key:
        # A fixed message per field: the REST fuzz test lists it among the rules a schema cannot state.
        raise InvalidInput(f"{what} is empty (or only punctuation)", field=what)
    return name, key


def _writable(*, actor: Actor, palace_id: int) -> None:
    """Owners and editors pass, viewers get PermissionDenied, non-members NotFound("entity not found")."""
    if actor.system:
        return
    try:
        palace_get(user=actor.user, palace_id=palace_id, write=True)
    except NotFound:
        raise NotFound("entity not found") from None


def _lock(*, entity_ids: Sequence[int], actor: Actor) -> dict[int, Entity]:
    """Lock these entities (in id order, so two merges cannot deadlock) after the write check; each must exist, be
    visible and not merged away."""
    rows = {
        e.pk: e
        for e in Entity.objects.select_for_update(of=("self",))
        .select_related("palace")
        .filter(pk__in=sorted(set(entity_ids)))
        .order_by("pk")
    }
    for entity_id in entity_ids:
        row = rows.get(entity_id)
        if row is None:
            # Row-level security locks only rows the actor may write: a viewer still sees the row and gets the same
            # PermissionDenied as without it.
            palace_id = Entity.objects.filter(pk=entity_id).values_list("palace_id", flat=True).first()
            if palace_id is not None:
                _writable(actor=actor, palace_id=palace_id)
            raise NotFound("entity not found")
        _writable(actor=actor, palace_id=row.palace_id)
    for row in rows.values():
        if row.merged_into_id is not None:
            raise Conflict(
                f"entity #{row.pk} ({row.name}) was merged into #{row.merged_into_id}; edit that one",
                merged_into=row.merged_into_id,
            )
    return rows


def _owner_of(*, palace_id: int, key: str, besides: Iterable[int]) -> Entity | None:
    """The live entity of the palace (other than `besides`) whose name or an alias normalises to `key`."""
    return (
        Entity.objects.filter(palace_id=palace_id, merged_into__isnull=True)
        .filter(Q(key=key) | Q(alias_keys__contains=[key]))
        .exclude(pk__in=list(besides))
        .order_by("pk")
        .first()
    )


def _clash(other: Entity, key: str, what: str) -> Conflict:
    return Conflict(
        f"{what} {key!r} already belongs to entity #{other.pk} ({other.name}); merge the two entities instead",
        entity=other.pk,
    )


def _set_aliases(entity: Entity, aliases: list[str]) -> None:
    """Store aliases deduplicated by key, never the entity's own key, in the order given."""
    seen = {entity.key}
    kept: list[str] = []
    for alias in aliases:
        key = name_key(alias)
        if key and key not in seen:
            seen.add(key)
            kept.append(alias)
    entity.aliases = kept
    entity.alias_keys = [name_key(a) for a in kept]


@dataclass
class MergeResult:
    survivor: Entity
    merged: Entity
    moved_links: int
    dropped_links: int  # the memory was already linked to the survivor
    facts: int
    aliases_added: list[str] = field(default_factory=list)


MAX_MERGE_RECORD = 5000  # links or facts a merge's op row lists for its revert; a larger merge is not revertible


def _iso(moment: Any) -> str | None:
    return moment.isoformat() if moment is not None else None


def _merge_record(*, merged: Entity, survivor: Entity, already: Any) -> dict[str, Any]:
    """What a merge is about to move, so the audit console can split the entities again (memory/audit/entities.py):
    the merged entity's links (memory, source) that move or are dropped, its facts, the entities merged into it, and
    the survivor's last mention before. Beyond MAX_MERGE_RECORD rows it records only that it was cut."""
    links = MemoryEntity.objects.filter(entity=merged).order_by("memory_id")
    record: dict[str, Any] = {
        "links": [list(pair) for pair in links.exclude(memory_id__in=already).values_list("memory_id", "source")],
        "dropped": [list(pair) for pair in links.filter(memory_id__in=already).values_list("memory_id", "source")],
        "facts": list(Fact.objects.filter(entity=merged).order_by("pk").values_list("pk", flat=True)),
        "redirected": list(Entity.objects.filter(merged_into=merged).order_by("pk").values_list("pk", flat=True)),
        "last_mentioned_before": _iso(survivor.last_mentioned_at),
    }
    if any(len(record[key]) > MAX_MERGE_RECORD for key in ("links", "dropped", "facts", "redirected")):
        return {"cut": True}
    return record


def entity_merge(*, entity_id: int, into_id: int, actor: Actor, reason: str = "") -> MergeResult:
    """Merge entity `entity_id` into `into_id` (the survivor), in one transaction:

    1. the survivor's aliases gain the merged entity's name and aliases (deduplicated by key);
    2. the merged entity's memory links move to the survivor (source "merge"), dropping those it already has;
    3. its facts, and entities once merged into it, point to the survivor;
    4. the merged row stays, with `merged_into` set, so its id still leads somewhere;
    5. one op row (entity.merge) on the survivor, recording what moved (`undo`) so the audit console can revert it.
    """
    if entity_id == into_id:
        raise InvalidInput(MERGE_ITSELF, field="into")
    with transaction.atomic():
        rows = _lock(entity_ids=[entity_id, into_id], actor=actor)
        merged, survivor = rows[entity_id], rows[into_id]
        if merged.palace_id != survivor.palace_id:
            raise InvalidInput(MERGE_PALACES, field="into")
        before = list(survivor.aliases)
        _set_aliases(survivor, [*survivor.aliases, merged.name, *merged.aliases])
        added = [a for a in survivor.aliases if a not in before]
        already = MemoryEntity.objects.filter(entity=survivor).values("memory_id")
        undo = _merge_record(merged=merged, survivor=survivor, already=already)
        dropped, _ = MemoryEntity.objects.filter(entity=merged, memory_id__in=already).delete()
        moved = MemoryEntity.objects.filter(entity=merged).update(entity=survivor, source=MemoryEntity.Source.MERGE)
        facts = Fact.objects.filter(entity=merged).update(entity=survivor)
        Entity.objects.filter(merged_into=merged).update(merged_into=survivor)
        stamps = [s for s in (survivor.last_mentioned_at, merged.last_mentioned_at) if s is not None]
        survivor.last_mentioned_at = max(stamps) if stamps else None
        survivor.save(update_fields=["aliases", "alias_keys", "last_mentioned_at"])
        merged.merged_into = survivor
        merged.save(update_fields=["merged_into"])
        oplog_write(
            op="entity.merge",
            actor=actor,
            palace=survivor.palace,
            target_kind="entity",
            target_id=survivor.pk,
            reason=clean_line(reason, "reason", MAX_REASON),
            detail={
                "merged": merged.pk,
                "merged_name": merged.name,
                "moved_links": moved,
                "dropped_links": dropped,
                "facts": facts,
                "aliases_added": added,
                "undo": {**undo, "last_mentioned_after": _iso(survivor.last_mentioned_at)},
            },
        )
    return MergeResult(
        survivor=survivor, merged=merged, moved_links=moved, dropped_links=dropped, facts=facts, aliases_added=added
    )


def entity_rename(*, entity_id: int, name: str, actor: Actor, reason: str = "") -> Entity:
    """Give an entity a new canonical name. The old name becomes an alias (unless only its spelling changed); a name
    that is another live entity's name or alias is refused with Conflict (merge them instead)."""
    new_name, new_key = _clean_name(name, "name")
    with transaction.atomic():
        entity = _lock(entity_ids=[entity_id], actor=actor)[entity_id]
        other = _owner_of(palace_id=entity.palace_id, key=new_key, besides=[entity.pk])
        if other is not None:
            raise _clash(other, new_key, "the name")
        old_name, old_key = entity.name, entity.key
        entity.name, entity.key = new_name, new_key
        _set_aliases(entity, [*entity.aliases, old_name] if old_key != new_key else list(entity.aliases))
        try:
            with transaction.atomic():
                entity.save(update_fields=["name", "key", "aliases", "alias_keys"])
        except IntegrityError:  # a concurrent write took the key between the check and the save
            raise Conflict(f"the name {new_key!r} was just taken by another entity; reload and retry") from None
        oplog_write(
            op="entity.rename",
            actor=actor,
            palace=entity.palace,
            target_kind="entity",
            target_id=entity.pk,
            reason=clean_line(reason, "reason", MAX_REASON),
            detail={"from": old_name, "to": new_name},
        )
    return entity


def entity_aliases_edit(
    *, entity_id: int, actor: Actor, add: Sequence[str] = (), remove: Sequence[str] = (), reason: str = ""
) -> Entity:
    """Add and remove aliases (matched by normalised form). An alias that is another live entity's name or alias is
    refused with Conflict; removing one the entity does not have is refused with InvalidInput, so a typo is seen."""
    if len(add) + len(remove) > MAX_ALIASES_PER_CALL:
        raise InvalidInput(f"at most {MAX_ALIASES_PER_CALL} aliases per call", field="add")
    added = [_clean_name(a, "alias") for a in add]
    removed_keys = [_clean_name(r, "alias")[1] for r in remove]
    with transaction.atomic():
        entity = _lock(entity_ids=[entity_id], actor=actor)[entity_id]
        missing = [k for k in removed_keys if k not in entity.alias_keys]
        if missing:
            raise InvalidInput(REMOVE_UNKNOWN, field="remove", alias=missing[0], aliases=list(entity.aliases))
        for _, key in added:
            other = _owner_of(palace_id=entity.palace_id, key=key, besides=[entity.pk])
            if other is not None:
                raise _clash(other, key, "the alias")
        before = list(entity.aliases)
        kept = [a for a in entity.aliases if name_key(a) not in removed_keys]
        _set_aliases(entity, [*kept, *(name for name, _ in added)])
        entity.save(update_fields=["aliases", "alias_keys"])
        oplog_write(
            op="entity.aliases",
            actor=actor,
            palace=entity.palace,
            target_kind="entity",
            target_id=entity.pk,
            reason=clean_line(reason, "reason", MAX_REASON),
            detail={
                "added": [a for a in entity.aliases if a not in before],
                "removed": [a for a in before if a not in entity.aliases],
            },
        )
    return entity


def entity_kind_set(*, entity_id: int, kind: str, actor: Actor, reason: str = "") -> Entity:
    """Give an entity another kind (one of Entity.Kind: the rules guess, a writer knows better). The same kind again
    changes nothing and writes no op row."""
    if kind not in Entity.Kind.values:
        raise InvalidInput(f"kind must be one of {', '.join(Entity.Kind.values)}", field="kind")
    with transaction.atomic():
        entity = _lock(entity_ids=[entity_id], actor=actor)[entity_id]
        if entity.kind == kind:
            return entity
        old = entity.kind
        entity.kind = kind
        entity.save(update_fields=["kind"])
        oplog_write(
            op="entity.kind",
            actor=actor,
            palace=entity.palace,
            target_kind="entity",
            target_id=entity.pk,
            reason=clean_line(reason, "reason", MAX_REASON),
            detail={"from": old, "to": kind},
        )
    return entity
