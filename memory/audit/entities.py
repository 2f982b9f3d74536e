"""Reverting a change to a palace's entities from the audit console: a merge (split the two again), a rename (the old
name back) and an alias edit (the aliases back); memory.knowledge writes them (entity.merge, entity.rename,
entity.aliases).

A rename and an alias edit are undone through the same services (entity_rename, entity_aliases_edit), so their
clash rules hold and each writes its usual op row. A merge has no service that undoes it; the split here reverses
exactly what the merge recorded it moved (`detail.undo`: the links with their sources, the dropped links, the facts,
the entities merged into it, the survivor's last mention), and only while the merged entity still points to the
survivor and none of its names was taken since. Merges recorded before they listed what they moved are refused with
that reason. Names are never put in a plan's text (a restorer may lack `memory.view_memory_body`): entities go by id.
Needs `memory.change_entity` besides `memory.restore_memory`.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils.dateparse import parse_datetime

from memory.audit.plan import Applied, RevertPlan, detail_of, palace_check
from memory.knowledge import entity_aliases_edit, entity_rename, name_key
from memory.models import Entity, Fact, Memory, MemoryEntity
from palace.actors import Actor
from palace.errors import Conflict
from palace.models import OpLog

PERMISSION = "memory.change_entity"
OPS = ("entity.merge", "entity.rename", "entity.aliases")
SPLIT = "entity_split"
RENAME_BACK = "entity_rename"
ALIASES_BACK = "entity_aliases"


def _taken(*, palace_id: int, keys: list[str], besides: list[int]) -> Entity | None:
    """A live entity of the palace (other than `besides`) whose name or an alias is one of `keys`."""
    keys = [k for k in keys if k]
    if not keys:
        return None
    found = Entity.objects.filter(palace_id=palace_id, merged_into__isnull=True).exclude(pk__in=besides)
    return found.filter(Q(key__in=keys) | Q(alias_keys__overlap=keys)).order_by("pk").first()


def plan_entity(*, plan: RevertPlan, row: OpLog) -> None:
    plan.needs = PERMISSION
    entity = Entity.objects.filter(pk=row.target_id).first() if row.target_id is not None else None
    if entity is None:
        plan.refuse(f"entity #{row.target_id} no longer exists")
        return
    plan.target = f"entity #{entity.pk}"
    if not palace_check(plan=plan, row=row, memory_palace_id=entity.palace_id, what=f"entity #{entity.pk}"):
        return
    if entity.merged_into_id is not None:
        plan.refuse(f"entity #{entity.pk} was merged into #{entity.merged_into_id} since; revert that merge first")
        return
    {"entity.merge": _plan_split, "entity.rename": _plan_rename, "entity.aliases": _plan_aliases}[row.op](
        plan=plan, row=row, entity=entity
    )


def _plan_rename(*, plan: RevertPlan, row: OpLog, entity: Entity) -> None:
    detail = detail_of(row)
    old, new = detail.get("from"), detail.get("to")
    if not isinstance(old, str) or not isinstance(new, str):
        plan.refuse("the op row does not record the names before and after")
    elif entity.name != new:
        plan.refuse(f"entity #{entity.pk} was renamed since (it no longer has the name this op gave it)")
    elif (other := _taken(palace_id=entity.palace_id, keys=[name_key(old)], besides=[entity.pk])) is not None:
        plan.refuse(f"entity #{other.pk} has the old name now; merge the two entities instead")
    else:
        plan.data = {"name": old}
        plan.act(RENAME_BACK, f"entity #{entity.pk}: its name before op #{row.pk} back (the later name stays an alias)")


def _plan_aliases(*, plan: RevertPlan, row: OpLog, entity: Entity) -> None:
    detail = detail_of(row)
    added, removed = list(detail.get("added") or []), list(detail.get("removed") or [])
    keys = set(entity.alias_keys)
    take = [a for a in added if name_key(a) in keys]  # still there: remove them again
    give = [a for a in removed if name_key(a) not in keys and name_key(a) != entity.key]  # still gone: back
    if not take and not give:
        plan.refuse(f"entity #{entity.pk}'s aliases are already as before the op (or changed since)")
        return
    other = _taken(palace_id=entity.palace_id, keys=[name_key(a) for a in give], besides=[entity.pk])
    if other is not None:
        plan.refuse(f"entity #{other.pk} has one of the removed aliases now; merge the two entities instead")
        return
    plan.data = {"remove": take, "add": give}
    plan.act(ALIASES_BACK, f"entity #{entity.pk}: remove {len(take)} alias(es) the op added, add back {len(give)}")


def _plan_split(*, plan: RevertPlan, row: OpLog, entity: Entity) -> None:
    detail = detail_of(row)
    undo = detail.get("undo")
    merged_id = detail.get("merged")
    merged = Entity.objects.filter(pk=merged_id).first() if isinstance(merged_id, int) else None
    if merged is None:
        plan.refuse("the merged entity no longer exists")
    elif merged.merged_into_id != entity.pk:
        plan.refuse(f"entity #{merged.pk} no longer points to #{entity.pk}; nothing to split")
    elif not isinstance(undo, dict) or undo.get("cut"):
        plan.refuse(
            "the op row does not list which links and facts the merge moved (merges recorded before they did, or "
            "larger than the record keeps): link the memories again by hand in the Entities view"
        )
    elif (other := _taken(palace_id=merged.palace_id, keys=_keys(merged), besides=[merged.pk, entity.pk])) is not None:
        plan.refuse(f"entity #{other.pk} has one of the merged entity's names now; merge or rename it first")
    else:
        plan.data = {"merged": merged.pk, "added": list(detail.get("aliases_added") or []), **undo}
        plan.act(
            SPLIT,
            f"split entity #{merged.pk} out of #{entity.pk} again: {len(undo.get('links', []))} link(s) and "
            f"{len(undo.get('facts', []))} fact(s) back, the aliases the merge added removed",
        )


def _keys(entity: Entity) -> list[str]:
    return [entity.key, *entity.alias_keys]


def apply_entity(*, plan: RevertPlan, row: OpLog, actor: Actor, reason: str) -> Applied:
    """Carry out an entity plan inside the caller's transaction."""
    entity = Entity.objects.select_related("palace").get(pk=int(plan.target_id or 0))
    detail: dict[str, Any]
    if plan.action == RENAME_BACK:
        old_name = entity.name
        entity = entity_rename(entity_id=entity.pk, name=plan.data["name"], actor=actor, reason=reason)
        detail = {"before": {"name": old_name}, "after": {"name": entity.name}}
    elif plan.action == ALIASES_BACK:
        before = {"aliases": list(entity.aliases)}
        add, remove = plan.data["add"], plan.data["remove"]
        entity = entity_aliases_edit(entity_id=entity.pk, actor=actor, add=add, remove=remove, reason=reason)
        detail = {"before": before, "after": {"aliases": list(entity.aliases)}}
    else:
        detail = _split(survivor_id=entity.pk, data=plan.data)
    return Applied(target_kind="entity", target_id=entity.pk, palace=entity.palace, detail=detail)


def _split(*, survivor_id: int, data: dict[str, Any]) -> dict[str, Any]:
    """Undo a merge from what it recorded (the module docstring), the two rows locked and checked again first."""
    rows = {e.pk: e for e in Entity.objects.select_for_update().filter(pk__in=sorted([survivor_id, data["merged"]]))}
    survivor, merged = rows[survivor_id], rows[data["merged"]]
    if merged.merged_into_id != survivor.pk or survivor.merged_into_id is not None:
        raise Conflict(f"entity #{merged.pk} or #{survivor.pk} changed meanwhile; look again")
    added_keys = {name_key(a) for a in data["added"]}
    kept = [a for a in survivor.aliases if name_key(a) not in added_keys]
    survivor.aliases, survivor.alias_keys = kept, [name_key(a) for a in kept]
    if _iso(survivor.last_mentioned_at) == data.get("last_mentioned_after"):
        before = data.get("last_mentioned_before")
        survivor.last_mentioned_at = parse_datetime(before) if isinstance(before, str) else None
    survivor.save(update_fields=["aliases", "alias_keys", "last_mentioned_at"])
    merged.merged_into = None
    try:
        with transaction.atomic():
            merged.save(update_fields=["merged_into"])
    except IntegrityError:  # another entity took its name between the plan and now
        raise Conflict(f"entity #{merged.pk}'s name was just taken by another entity; look again") from None
    by_source: dict[str, list[int]] = {}
    for memory_id, source in data.get("links", []):
        by_source.setdefault(source, []).append(memory_id)
    moved = sum(
        MemoryEntity.objects.filter(entity=survivor, memory_id__in=ids).update(entity=merged, source=source)
        for source, ids in by_source.items()
    )
    alive = set(Memory.objects.filter(pk__in=[m for m, _ in data.get("dropped", [])]).values_list("pk", flat=True))
    MemoryEntity.objects.bulk_create(
        [
            MemoryEntity(palace_id=merged.palace_id, memory_id=m, entity=merged, source=source)
            for m, source in data.get("dropped", [])
            if m in alive
        ],
        ignore_conflicts=True,
    )
    facts = Fact.objects.filter(pk__in=data.get("facts", []), entity=survivor).update(entity=merged)
    Entity.objects.filter(pk__in=data.get("redirected", []), merged_into=survivor).update(merged_into=merged)
    return {
        "merged": merged.pk,
        "before": {"merged_into": survivor.pk},
        "after": {"merged_into": None},
        "links_back": moved,
        "facts_back": facts,
    }


def _iso(moment: Any) -> str | None:
    return moment.isoformat() if moment is not None else None
