"""Facts on two time axes: writing them (`facts_write`) and asking what was true, and what Atrium knew, at a time
(`facts_query`, `facts_for_memories` for search hits).

A fact is a short statement about an entity. **Valid time** (`valid_from` .. `valid_to`) is when it is true in the
world; **record time** (`recorded_at` .. `superseded_at`) is when Atrium learned it and when a later fact replaced
that record. A fact that `replaces` another ends exactly that one: `old.valid_to = new.valid_from` (or now) and
`old.superseded_at = now`. Nothing else of the entity is touched (graph memories are known to over-invalidate).

Reading at a record time `known_at` K shows what Atrium knew then: a fact recorded after K is invisible, and a
replacement recorded after K does not count yet, so the old fact shows as it stood then, open-ended. Reading at a
valid time `as_of` T shows the facts true at T (by what Atrium knows now, or at K when both are given).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from memory.knowledge.rules import normalise
from memory.models import Entity, Fact, MemoryEntity
from memory.text import scrub_inbound_text
from palace.actors import Actor
from palace.errors import InvalidInput, NotFound
from palace.models import Palace
from palace.oplog import oplog_write
from palace.selectors import palace_get

MAX_FACTS = 50  # per write call
MAX_CONTENT = 2000
MAX_PREDICATE = 100
MAX_NAME = 200
MAX_SHOWN = 200  # facts a query returns at most
HIT_FACTS = 5  # facts attached to one search hit at most
MAX_MERGE_HOPS = 20
SUGGESTIONS = 5


def fact_name_key(name: str) -> str:
    """A name as entities are keyed (memory.knowledge.rules.normalise: NFKC, casefolded, whitespace collapsed,
    punctuation stripped at both ends, symbols such as + # @ kept)."""
    return normalise(name)


# --- writing ---------------------------------------------------------------------------------------------------


@dataclass
class FactWritten:
    index: int
    fact: Fact
    entity_created: bool
    replaced: Fact | None = None
    # Other facts of the entity with the same predicate that are still current beside this one: a predicate that
    # holds one value (lives_in) now has two truths, and the answer says how to replace (`_same_predicate`).
    alongside: list[int] = field(default_factory=list)
    adopted: bool = False  # `replaces` named an old fact and this identical current fact became its successor


@dataclass
class FactFailed:
    index: int
    reason: str
    candidates: list[Entity] = field(default_factory=list)


@dataclass
class FactsWriteResult:
    palace: Palace
    written: list[FactWritten]
    failed: list[FactFailed]


class _EntryError(Exception):
    def __init__(self, reason: str, candidates: list[Entity] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.candidates = candidates or []


def parse_moment(value: object, name: str) -> datetime | None:
    """An ISO 8601 date (its start) or date-time, read in the server's time zone (settings.TIME_ZONE) when it
    carries none; None for an absent value. InvalidInput otherwise."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime.combine(value, time.min)
    elif isinstance(value, str):
        text = value.strip()
        try:
            if "T" in text or " " in text:
                moment = datetime.fromisoformat(text)
            else:
                moment = datetime.combine(date.fromisoformat(text), time.min)
        except ValueError:
            raise InvalidInput(f"{name} must be an ISO 8601 date (2026-03-01) or date-time", field=name) from None
    else:
        raise InvalidInput(f"{name} must be an ISO 8601 date (2026-03-01) or date-time", field=name)
    if moment.tzinfo is None:  # a bare date or a naive time is read in the server's zone, as at every door
        moment = moment.replace(tzinfo=ZoneInfo(settings.TIME_ZONE))
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise InvalidInput(f"{name} is outside the calendar", field=name) from None


def _text(value: object, name: str, limit: int, *, required: bool) -> tuple[str, tuple[str, ...]]:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise _EntryError(f"{name} must be text")
    scrubbed = scrub_inbound_text(value.replace("\x00", " "), one_line=True)
    if required and not scrubbed.text:
        raise _EntryError(f"{name} is empty")
    if len(scrubbed.text) > limit:
        raise _EntryError(f"{name} is at most {limit} characters")
    return scrubbed.text, scrubbed.types


def _follow_merges(entity: Entity) -> Entity:
    for _ in range(MAX_MERGE_HOPS):
        if entity.merged_into_id is None:
            return entity
        entity = Entity.objects.get(pk=entity.merged_into_id)
    return entity


def _by_name(*, palace_ids: Sequence[int], key: str) -> list[Entity]:
    """Live entities whose key is `key`, else those with `key` among their aliases."""
    live = Entity.objects.filter(palace_id__in=palace_ids, merged_into__isnull=True)
    exact = list(live.filter(key=key).order_by("palace_id", "pk"))
    return exact or list(live.filter(alias_keys__contains=[key]).order_by("palace_id", "pk"))


def _entity_for_write(
    *, palace: Palace, actor: Actor, entry: dict[str, Any], now: datetime
) -> tuple[Entity | None, bool]:
    """The entity an entry names (by entityId or name), created when a name is new. (None, False) when it names
    none (then `replaces` must say which)."""
    entity_id, name = entry.get("entityId"), entry.get("entity")
    if entity_id is not None:
        if not isinstance(entity_id, int) or isinstance(entity_id, bool):
            raise _EntryError("entityId must be an integer")
        found = Entity.objects.filter(pk=entity_id, palace=palace).first()
        if found is None:
            raise _EntryError(f"entity #{entity_id} not found in this palace")
        return _follow_merges(found), False
    if name is None:
        return None, False
    shown, _ = _text(name, "entity", MAX_NAME, required=True)
    key = fact_name_key(shown)
    if not key:
        raise _EntryError("entity has no letters or digits")
    matches = _by_name(palace_ids=[palace.pk], key=key)
    if len(matches) > 1:
        raise _EntryError(f"entity {shown!r} is ambiguous; give entityId", candidates=matches)
    if matches:
        return matches[0], False
    kind = entry.get("kind") or Entity.Kind.OTHER
    if not isinstance(kind, str) or not re.fullmatch(r"[a-z][a-z_]{0,31}", kind):
        raise _EntryError("kind must be a short lowercase word (person, project, tool, concept, place, other)")
    try:
        with transaction.atomic():
            entity = Entity.objects.create(palace=palace, name=shown, key=key, kind=kind, created_at=now)
    except IntegrityError:  # created concurrently under the same key: use that one
        return _by_name(palace_ids=[palace.pk], key=key)[0], False
    oplog_write(
        op="entity.create",
        actor=actor,
        palace=palace,
        target_kind="entity",
        target_id=entity.pk,
        detail={"name": entity.name, "kind": entity.kind, "via": "facts"},
    )
    return entity, True


def _same_predicate(*, entity_id: int, predicate: str, now: datetime) -> Any:
    """The entity's current facts (not replaced, not ended, already valid) with this predicate (case-insensitive)."""
    current = Fact.objects.filter(entity_id=entity_id, predicate__iexact=predicate, superseded_at__isnull=True)
    return current.exclude(valid_to__lte=now).exclude(valid_from__gt=now).order_by("pk")


def _adopt(*, old: Fact, entity: Entity, predicate: str, content: str, now: datetime) -> Fact | None:
    """A current fact that says exactly what the replacement says, written after `old` without `replaces` (the
    answer to that write suggested replaces=old): it becomes old's successor instead of a second copy."""
    twin = _same_predicate(entity_id=entity.pk, predicate=predicate, now=now).filter(
        content=content, replaces__isnull=True, recorded_at__gte=old.recorded_at
    )
    return twin.exclude(pk=old.pk).select_for_update().first()


def _write_one(*, palace: Palace, actor: Actor, index: int, entry: object, now: datetime) -> FactWritten:
    """One entry, inside the caller's savepoint: validate, resolve the entity, end the replaced fact, write."""
    if not isinstance(entry, dict):
        raise _EntryError("each fact is an object with entity (or entityId) and content")
    unknown = set(entry) - {"entity", "entityId", "content", "predicate", "replaces", "valid_from", "kind"}
    if unknown:
        raise _EntryError(f"unknown field(s): {', '.join(sorted(unknown))}")
    content, redactions = _text(entry.get("content"), "content", MAX_CONTENT, required=True)
    predicate, _ = _text(entry.get("predicate"), "predicate", MAX_PREDICATE, required=False)
    try:
        valid_from = parse_moment(entry.get("valid_from"), "valid_from")
    except InvalidInput as exc:
        raise _EntryError(exc.message) from None
    replaces_id = entry.get("replaces")
    old = None
    if replaces_id is not None:
        if not isinstance(replaces_id, int) or isinstance(replaces_id, bool):
            raise _EntryError("replaces must be a fact id (an integer)")
        old = Fact.objects.select_for_update().filter(pk=replaces_id, palace=palace).first()
        if old is None:
            raise _EntryError(f"fact #{replaces_id} not found in this palace")
        if old.superseded_at is not None:
            successor = Fact.objects.filter(replaces=old).values_list("pk", flat=True).first()
            raise _EntryError(f"fact #{old.pk} was already replaced by #{successor}; replace that one")
    entity, created = _entity_for_write(palace=palace, actor=actor, entry=entry, now=now)
    if entity is None:
        if old is None:
            raise _EntryError("name the entity (entity or entityId), or the fact it replaces")
        entity = Entity.objects.get(pk=old.entity_id)
    twin = None
    if old is not None:
        if old.entity_id != entity.pk:
            raise _EntryError(f"fact #{old.pk} is about entity #{old.entity_id}, not #{entity.pk}")
        twin = _adopt(old=old, entity=entity, predicate=predicate, content=content, now=now) if predicate else None
        if twin is not None and valid_from is None:
            valid_from = twin.valid_from or twin.recorded_at  # the copy has been true since it was written
        end = valid_from or now
        if old.valid_from is not None and end < old.valid_from:
            raise _EntryError(
                f"valid_from {end.date().isoformat()} is before fact #{old.pk} became valid "
                f"({old.valid_from.date().isoformat()})"
            )
        old.valid_to = end
        old.superseded_at = now
        old.save(update_fields=["valid_to", "superseded_at"])
        valid_from = end  # the replacement holds from where the old one ends
    if twin is not None and old is not None:
        twin.replaces, twin.valid_from = old, valid_from
        twin.save(update_fields=["replaces", "valid_from"])
        oplog_write(
            op="fact.write", actor=actor, palace=palace, target_kind="fact", target_id=twin.pk,
            detail={"entity": entity.pk, "predicate": predicate, "replaces": old.pk, "adopted": True,
                    "valid_from": valid_from.isoformat() if valid_from else None, "redactions": list(redactions)},
        )  # fmt: skip
        return FactWritten(index=index, fact=twin, entity_created=created, replaced=old, adopted=True)
    alongside = [] if old is not None or not predicate else list(
        _same_predicate(entity_id=entity.pk, predicate=predicate, now=now).values_list("pk", flat=True)
    )  # fmt: skip
    fact = Fact.objects.create(
        palace=palace,
        entity=entity,
        predicate=predicate,
        content=content,
        valid_from=valid_from,
        recorded_at=now,
        replaces=old,
        created_by_id=actor.user_id,
        created_by_token_id=actor.token_id,
    )
    oplog_write(
        op="fact.write",
        actor=actor,
        palace=palace,
        target_kind="fact",
        target_id=fact.pk,
        detail={
            "entity": entity.pk,
            "predicate": predicate,
            "replaces": old.pk if old is not None else None,
            "valid_from": valid_from.isoformat() if valid_from else None,
            "redactions": list(redactions),
        },
    )
    return FactWritten(index=index, fact=fact, entity_created=created, replaced=old, alongside=alongside)


def facts_write(*, palace: Palace, actor: Actor, facts: list[Any], now: datetime | None = None) -> FactsWriteResult:
    """Write up to MAX_FACTS facts into `palace` (resolved for writing by the door; checked again here).

    Each entry: `entity` (a name; created when new) or `entityId`, `content`, optional `predicate`, `kind` (for a
    new entity), `replaces` (a fact id of this palace, still current) and `valid_from` (ISO date). Each entry runs
    in its own savepoint: a bad one lands in `failed` with its reason and the rest are written. One op row per
    fact (`fact.write`) and per entity created (`entity.create`)."""
    now = now or timezone.now()
    if actor.user is not None:
        palace_get(user=actor.user, palace_id=palace.pk, write=True)
    if not isinstance(facts, list) or not facts:
        raise InvalidInput("facts must be a non-empty list", field="facts")
    if len(facts) > MAX_FACTS:
        raise InvalidInput(f"at most {MAX_FACTS} facts per call", field="facts")
    written: list[FactWritten] = []
    failed: list[FactFailed] = []
    with transaction.atomic():
        for index, entry in enumerate(facts):
            try:
                with transaction.atomic():
                    written.append(_write_one(palace=palace, actor=actor, index=index, entry=entry, now=now))
            except _EntryError as exc:
                failed.append(FactFailed(index=index, reason=exc.reason, candidates=exc.candidates))
    return FactsWriteResult(palace=palace, written=written, failed=failed)


# --- reading -------------------------------------------------------------------------------------------------------


@dataclass
class FactView:
    """A fact as seen at a point: `valid_to` and `replaced_by` as they were known at `known_at` (a replacement
    recorded later did not exist yet), and a `state`: current | ended | replaced | not_yet_valid."""

    fact: Fact
    valid_to: datetime | None
    replaced_by: int | None
    state: str
    superseded_at: datetime | None = None
    also_current: list[int] = field(default_factory=list)  # current facts of the entity with the same predicate

    @property
    def invalid(self) -> bool:
        return self.state != "current"


@dataclass
class FactsQueryResult:
    entity: Entity | None
    facts: list[FactView] = field(default_factory=list)
    candidates: list[Entity] = field(default_factory=list)  # the name is ambiguous: one of these
    suggestions: list[Entity] = field(default_factory=list)  # no such name: did you mean
    as_of: datetime | None = None
    known_at: datetime | None = None
    hidden: int = 0  # facts of the entity not shown (ended/replaced, or beyond MAX_SHOWN)


def fact_view(
    fact: Fact, *, as_of: datetime | None, known_at: datetime | None, successor: int | None, now: datetime
) -> FactView:
    """How `fact` stood at valid time `as_of` (None: now) by what Atrium knew at `known_at` (None: now).

    A replaced fact is still the truth before its replacement took effect (its `valid_to`); a replacement Atrium
    had not recorded yet at `known_at` leaves the old fact open-ended."""
    at = as_of or now
    replaced_known = fact.superseded_at is not None and (known_at is None or fact.superseded_at <= known_at)
    valid_to = fact.valid_to if fact.superseded_at is None or replaced_known else None
    if fact.valid_from is not None and fact.valid_from > at:
        state = "not_yet_valid"
    elif valid_to is not None and valid_to <= at:
        state = "replaced" if replaced_known else "ended"
    else:
        state = "current"
    return FactView(
        fact=fact,
        valid_to=valid_to,
        replaced_by=successor if replaced_known else None,
        state=state,
        superseded_at=fact.superseded_at if replaced_known else None,
    )


def _views(
    facts: Iterable[Fact], *, as_of: datetime | None, known_at: datetime | None, now: datetime
) -> list[FactView]:
    rows = [f for f in facts if known_at is None or f.recorded_at <= known_at]
    successors = {f.replaces_id: f.pk for f in rows if f.replaces_id is not None}
    extra_ids = [f.pk for f in rows if f.superseded_at is not None and f.pk not in successors]
    if extra_ids:  # successors outside `facts` (another entity's list cannot hold them; kept for safety)
        successors.update(dict(Fact.objects.filter(replaces_id__in=extra_ids).values_list("replaces_id", "pk")))
    return [fact_view(f, as_of=as_of, known_at=known_at, successor=successors.get(f.pk), now=now) for f in rows]


def _suggest(*, palace_ids: Sequence[int], key: str) -> list[Entity]:
    """Entities whose name or an alias is close to `key` (difflib over the palaces' keys)."""
    names: dict[str, int] = {}
    live = Entity.objects.filter(palace_id__in=palace_ids, merged_into__isnull=True)
    for pk, own, aliases in live.values_list("pk", "key", "alias_keys")[:20000]:
        names.setdefault(own, pk)
        for alias in aliases or []:
            names.setdefault(alias, pk)
    close = difflib.get_close_matches(key, list(names), n=SUGGESTIONS * 2, cutoff=0.6)
    contained = [n for n in names if len(key) >= 3 and (key in n or n in key) and n not in close]
    ids = list(dict.fromkeys(names[n] for n in [*close, *contained]))[:SUGGESTIONS]
    by_id = Entity.objects.in_bulk(ids)
    return [by_id[i] for i in ids if i in by_id]


def entity_resolve(
    *, palace_ids: Sequence[int], name: str | None = None, entity_id: int | None = None
) -> tuple[Entity | None, list[Entity], list[Entity]]:
    """(entity, candidates, suggestions) for a name or id among `palace_ids` (already resolved for reading by the
    caller). Never creates. NotFound for an id outside them. A merged entity leads to the one it was merged into."""
    if entity_id is not None:
        found = Entity.objects.filter(pk=entity_id, palace_id__in=palace_ids).first()
        if found is None:
            raise NotFound("entity not found")
        return _follow_merges(found), [], []
    key = fact_name_key(name or "")
    if not key:
        raise InvalidInput("give entity (a name or alias) or the entity's id", field="entity")
    matches = _by_name(palace_ids=palace_ids, key=key)
    if len(matches) == 1:
        return matches[0], [], []
    if matches:
        return None, matches, []
    return None, [], _suggest(palace_ids=palace_ids, key=key)


def facts_query(
    *,
    palace_ids: Sequence[int],
    entity: str | None = None,
    entity_id: int | None = None,
    as_of: datetime | None = None,
    known_at: datetime | None = None,
    include_invalid: bool = False,
    now: datetime | None = None,
) -> FactsQueryResult:
    """The facts of one entity true at `as_of` (valid time) by what Atrium knew at `known_at` (record time); each
    None means now. `include_invalid` also lists the ended, replaced and not-yet-valid ones, marked by `state`.
    No entity is created; an ambiguous name answers with `candidates`, an unknown one with `suggestions`."""
    now = now or timezone.now()
    if (entity is None or not str(entity).strip()) and entity_id is None:
        raise InvalidInput("give entity (a name or alias) or the entity's id", field="entity")
    found, candidates, suggestions = entity_resolve(palace_ids=palace_ids, name=entity, entity_id=entity_id)
    result = FactsQueryResult(
        entity=found, candidates=candidates, suggestions=suggestions, as_of=as_of, known_at=known_at
    )
    if found is None:
        return result
    rows = Fact.objects.filter(entity=found).select_related("entity")
    rows = rows.order_by(F("valid_from").asc(nulls_first=True), "recorded_at", "pk")
    if known_at is not None:
        rows = rows.filter(recorded_at__lte=known_at)
    views = _views(rows[: MAX_SHOWN * 5], as_of=as_of, known_at=known_at, now=now)
    shown = views if include_invalid else [v for v in views if not v.invalid]
    result.facts = shown[:MAX_SHOWN]
    result.hidden = len(views) - len(result.facts)
    _mark_same_predicate(views)
    return result


def _mark_same_predicate(views: list[FactView]) -> None:
    """Each current fact with a predicate names the other current facts of the entity with the same predicate:
    two values of lives_in both true, one of them probably meant to replace the other."""
    by_predicate: dict[str, list[FactView]] = {}
    for view in views:
        if view.state == "current" and view.fact.predicate:
            by_predicate.setdefault(view.fact.predicate.casefold(), []).append(view)
    for group in by_predicate.values():
        for view in group:
            view.also_current = [v.fact.pk for v in group if v is not view]


def facts_for_memories(
    *, memory_ids: Sequence[int], as_of: datetime | None, known_at: datetime | None, now: datetime
) -> dict[int, list[FactView]]:
    """For search hits: the current facts (at `as_of` / `known_at`) of the entities each memory is linked to, at
    most HIT_FACTS per memory. One query for the links; a second only when there are links."""
    links = list(
        MemoryEntity.objects.filter(memory_id__in=memory_ids, entity__merged_into__isnull=True).values_list(
            "memory_id", "entity_id"
        )
    )
    if not links:
        return {}
    rows = Fact.objects.filter(entity_id__in={e for _, e in links}).select_related("entity")
    if known_at is not None:
        rows = rows.filter(recorded_at__lte=known_at)
    latest = rows.order_by("-recorded_at", "-pk")[: MAX_SHOWN * 5]
    views = [v for v in _views(latest, as_of=as_of, known_at=known_at, now=now) if not v.invalid]
    by_entity: dict[int, list[FactView]] = {}
    for view in views:
        by_entity.setdefault(view.fact.entity_id, []).append(view)
    out: dict[int, list[FactView]] = {}
    for memory_id, entity_id in links:
        out.setdefault(memory_id, []).extend(by_entity.get(entity_id, []))
    return {m: v[:HIT_FACTS] for m, v in out.items() if v}
