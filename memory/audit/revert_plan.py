"""What "revert this change" means for an op row, decided before anything is done, so a preview and the apply that
follows say the same thing (memory/audit/revert.py applies a plan; the console and the bulk preview show them).

A revert is a new change that undoes the old one's effect; history is never rewritten. Meaningful reverts of a
memory's changes (planned here):

- memory.forget: restore the memory, while it is still forgotten;
- memory.decay, memory.archive: restore the memory, while it is still archived;
- memory.restore: forget (or archive) it again, as it was before, while it is still active;
- memory.save (a new memory): forget it, while it is active or archived;
- memory.update, memory.checkout: check out the version it replaced (a new head with the old content), while the
  memory it made is still the head;
- memory.distill: undo the distillation (members back, the rule archived), while the rule is active;
- memory.report, memory.reinforce: set the confidence back, while nobody changed it since.

The other kinds, each planned (and applied) in its own module, each needing a permission besides
`memory.restore_memory` (`RevertPlan.needs`): a project's members and roles (members.py), entity merges, renames
and aliases (entities.py), curated profile and handoff versions (versions.py), and edits made in the admin
(admin_edits.py).

Anything else is refused with its own reason (REFUSALS: what to do instead). A row already reverted is refused too.

`Sim` lets a list of plans be computed in the order they will be applied: each plan sees the states the earlier
plans will leave (a token that forgot and then restored a memory is reverted to exactly where it started).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory.audit import admin_edits, entities, members, versions
from memory.audit.plan import (
    ARCHIVE,
    BULK_OP,
    CHECKOUT,
    CONFIDENCE,
    DISTILL_UNDO,
    FOLDED,
    FORGET,
    RESTORE,
    REVERT_OP,
    RevertPlan,
    detail_of,
    palace_check,
    palace_name,
)
from memory.lifecycle import chain_head
from memory.models import Memory
from palace.models import OpLog

REFUSALS = {
    "memory.merge": (
        "a merge reinforced an existing memory with a restatement; there is no earlier version to return to"
    ),
    "memory.supersede": "part of a distillation: undo the distillation from the rule's history",
    "memory.unsupersede": "part of an undone distillation: nothing to revert here",
    "memory.distill_undo": "an undone distillation is not redone from the console; distil again if it was wrong",
    "memory.replace": "a contradiction decision: check out the older version from its history to bring it back",
    "edge.decide": "a contradiction decision: restore or check out the versions it changed from their history",
    "edge.close": "edges close when a memory is corrected or forgotten; revert that change instead",
    REVERT_OP: "a revert is undone by reverting the change it made again (its own rows: restore, forget, a role…)",
    BULK_OP: "a bulk revert is undone row by row from the memories' histories",
    # Changes that are not a memory's and have no revert, each with what to do instead.
    "user.create": "users are kept, never deleted (the op log refers to them): deactivate the user in the admin",
    "palace.create": "palaces are kept, never deleted (their op log refers to them): remove the members instead",
    "palace.import": "an import is undone memory by memory: bulk restore the importing user's time range",
    "token.create": "revoke the token instead (the Tokens page, the admin's token list or `atrium token revoke`)",
    "token.revoke": "a revoked token stays revoked (its secret may have leaked): its owner creates a new one",
    "room.open": "rooms are laid out by the slotting code and never recycled; nothing to undo",
    "room.rename": "rooms are laid out by the slotting code; rename the room again where it is shown",
    "fact.write": "facts are never edited: write a fact that replaces this one (`memory_facts` with `replaces`)",
    "entity.create": "entities are made when a memory names them: merge this one into the right one instead",
    "judge.settings": "change the judge's settings back on their admin page, where the service checks them",
    "evidence.assess": "an assessment is a verdict on one search's evidence; nothing stored changes with it",
    "memory.assess": "an assessment is a verdict on one search's evidence; nothing stored changes with it",
    "distill.reject": "a rejected proposal is proposed again by a later distillation run if it still holds",
    "distill.apply": "undo the distillation from the rule's history (it made the rule)",
}
# A lossless import keeps another server's op rows as a record (ops/portability/importing.py): they changed nothing
# here, and what they name (actor, time, target) came from a file anyone can edit.
IMPORTED = (
    "an imported record of another server's history: it changed nothing here; undo the import's memories instead "
    "(bulk restore the importing user's time range)"
)
# A bulk revert undoes a memory's changes only; the rest of a person's changes are reverted one row at a time.
BULK_MEMORIES_ONLY = "bulk restore reverts memories only: revert this row on its own (the op log's “revert…”)"
# By prefix, for ops not named above.
PREFIX_REFUSALS = {
    "review": "review scheduling follows the grades: grade the card again (or unenrol it) instead",
    "capture": "captured turns are kept as they came; forget the memories made from them instead",
    "backfill": "a backfill run is undone memory by memory: bulk restore its time range",
    "embeddings": "vectors are derived from the text; nothing to undo",
    "slots": "slots are laid out by the slotting code and never recycled; nothing to undo",
    "slot": "slots are laid out by the slotting code and never recycled; nothing to undo",
}
# The other kinds of change a revert is defined for: op → its planner (the modules beside say what each does).
KIND_PLANNERS = {
    **dict.fromkeys(members.OPS, members.plan_member),
    **dict.fromkeys(entities.OPS, entities.plan_entity),
    **dict.fromkeys(versions.OPS, versions.plan_version),
    **dict.fromkeys(admin_edits.OPS, admin_edits.plan_admin_edit),
}


@dataclass
class Sim:
    """Memory states as earlier plans of a list will leave them (empty: as stored)."""

    status: dict[int, str] = field(default_factory=dict)
    confidence: dict[int, float] = field(default_factory=dict)
    heads: dict[int, int] = field(default_factory=dict)  # a superseded version → the head a checkout made stale

    def status_of(self, memory: Memory) -> str:
        return self.status.get(memory.pk, memory.status)

    def confidence_of(self, memory: Memory) -> float:
        return self.confidence.get(memory.pk, memory.confidence)

    def after(self, plan: RevertPlan) -> None:
        if plan.memory_id is None or not plan.doable:
            return
        if plan.action in (RESTORE, FORGET, ARCHIVE):
            self.status[plan.memory_id] = {RESTORE: "active", FORGET: "forgotten", ARCHIVE: "archived"}[plan.action]
        elif plan.action == CHECKOUT:
            self.status[plan.memory_id] = "superseded"
        elif plan.action == DISTILL_UNDO:
            self.status[plan.memory_id] = "archived"
        elif plan.action == CONFIDENCE and plan.confidence is not None:
            self.confidence[plan.memory_id] = plan.confidence


def reverted_by(op_id: int) -> int | None:
    """The revert row that already undid this op row, if any."""
    found = OpLog.objects.filter(op=REVERT_OP, detail__reverts=op_id).values_list("pk", flat=True).first()
    return None if found is None else int(found)


def reverted_map(op_ids: list[int]) -> dict[int, int]:
    """For many op rows at once (a history page): op row id → the revert row that undid it."""
    rows = OpLog.objects.filter(op=REVERT_OP, detail__reverts__in=op_ids).values_list("pk", "detail")
    return {int(detail["reverts"]): int(pk) for pk, detail in rows if isinstance(detail, dict)}


def plan_revert(
    *,
    row: OpLog,
    sim: Sim | None = None,
    reverted: dict[int, int] | None = None,
    memories: dict[int, Memory] | None = None,
    staff: Any = None,
) -> RevertPlan:
    """What reverting `row` would do. `reverted` (reverted_map) and `memories` (by id) spare a page listing many
    rows a query per row; without them each is read here. With `staff`, a plan whose kind needs a permission they
    lack says so (and is not doable)."""
    plan = RevertPlan(op_id=row.pk, op=row.op, target_id=row.target_id, target=_target(row), palace=_palace(row))
    done = reverted.get(row.pk) if reverted is not None else reverted_by(row.pk)
    if done is not None:
        plan.refused = f"already reverted (op #{done})"
        return plan
    if row.actor_kind == OpLog.ActorKind.IMPORT:
        plan.refused = IMPORTED
        return plan
    refusal = REFUSALS.get(row.op) or PREFIX_REFUSALS.get(row.op.split(".", 1)[0])
    if refusal:
        plan.refused = refusal
        return plan
    kind = KIND_PLANNERS.get(row.op)
    if kind is not None:
        kind(plan=plan, row=row)
        if staff is not None and plan.needs and plan.action and not staff.has_perm(plan.needs):
            plan.missing_permission = True
            plan.refused = f"reverting {row.op} also needs the “{plan.needs}” permission"
        return plan
    if row.target_kind != "memory" or row.target_id is None:
        plan.refused = (
            f"{row.op} has no revert: it is not a change to a memory, a member, an entity, a profile, a handoff or "
            "an admin edit; change it back where it is managed"
        )
        return plan
    _plan_memory(plan=plan, row=row, sim=sim or Sim(), memories=memories)
    return plan


def _palace(row: OpLog) -> str:
    return palace_name(row.palace) if row.palace_id is not None else "no palace"


def _target(row: OpLog) -> str:
    if row.target_id is None:
        return row.target_kind or "—"
    return f"{row.target_kind or 'row'} #{row.target_id}"


def _plan_memory(*, plan: RevertPlan, row: OpLog, sim: Sim, memories: dict[int, Memory] | None) -> None:
    assert row.target_id is not None
    if memories is not None and row.target_id in memories:
        memory: Memory | None = memories[row.target_id]
    else:
        memory = Memory.objects.filter(pk=row.target_id).first()
    if memory is None:
        plan.refused = f"memory #{row.target_id} no longer exists"
        return
    if not palace_check(plan=plan, row=row, memory_palace_id=memory.palace_id, what=f"memory #{memory.pk}"):
        return
    plan.memory_id = memory.pk
    decide = PLANNERS.get(row.op)
    if decide is None:
        plan.refused = f"{row.op} cannot be reverted from the console"
        return
    decide(plan=plan, row=row, memory=memory, sim=sim)


def plan_page(*, rows: list[OpLog], staff: Any) -> dict[int, RevertPlan]:
    """Plans for the rows of one page (the console), with what was reverted and the memories read once for all."""
    reverted = reverted_map([row.pk for row in rows])
    ids = {row.target_id for row in rows if row.target_kind == "memory" and row.target_id is not None}
    memories = Memory.objects.in_bulk(list(ids)) if ids else {}
    return {row.pk: plan_revert(row=row, reverted=reverted, memories=memories, staff=staff) for row in rows}


def _act(plan: RevertPlan, action: str, describe: str) -> None:
    plan.action, plan.describe = action, describe


def _plan_forget(*, plan: RevertPlan, row: OpLog, memory: Memory, sim: Sim) -> None:
    status = sim.status_of(memory)
    if status != Memory.Status.FORGOTTEN:
        plan.refused = f"memory #{memory.pk} is {status} now; nothing to restore"
        return
    _act(plan, RESTORE, f"restore memory #{memory.pk} (forgotten → active)")


def _plan_archive(*, plan: RevertPlan, row: OpLog, memory: Memory, sim: Sim) -> None:
    status = sim.status_of(memory)
    if status != Memory.Status.ARCHIVED:
        plan.refused = f"memory #{memory.pk} is {status} now; nothing to restore"
        return
    _act(plan, RESTORE, f"restore memory #{memory.pk} (archived → active)")


def _plan_restore(*, plan: RevertPlan, row: OpLog, memory: Memory, sim: Sim) -> None:
    status = sim.status_of(memory)
    previous = str(detail_of(row).get("from_status", "forgotten"))
    if status != Memory.Status.ACTIVE:
        plan.refused = f"memory #{memory.pk} is {status} now, not active; nothing to take back"
        return
    action = ARCHIVE if previous == Memory.Status.ARCHIVED else FORGET
    _act(plan, action, f"{action} memory #{memory.pk} again (active → {previous})")


def _plan_save(*, plan: RevertPlan, row: OpLog, memory: Memory, sim: Sim) -> None:
    status = sim.status_of(memory)
    if status in (Memory.Status.ACTIVE, Memory.Status.ARCHIVED):
        _act(plan, FORGET, f"forget memory #{memory.pk} ({status} → forgotten)")
    elif status == Memory.Status.SUPERSEDED:
        head = chain_head(memory)
        plan.refused = (
            f"memory #{memory.pk} was corrected since (current version #{head.pk}); revert the correction first, "
            f"or forget #{head.pk}"
        )
    else:
        plan.refused = f"memory #{memory.pk} is already {status}"


def _plan_correction(*, plan: RevertPlan, row: OpLog, memory: Memory, sim: Sim) -> None:
    status = sim.status_of(memory)
    older = detail_of(row).get("supersedes")
    if not isinstance(older, int):
        plan.refused = "the op row does not say which version it replaced"
        return
    if status not in (Memory.Status.ACTIVE, Memory.Status.ARCHIVED):
        plan.refused = (
            f"memory #{memory.pk} changed since (now {status}); check out the version you want from its history"
        )
        return
    older_palace = Memory.objects.filter(pk=older).values_list("palace_id", flat=True).first()
    if older_palace is not None and not palace_check(
        plan=plan, row=row, memory_palace_id=older_palace, what=f"version #{older}"
    ):
        return
    plan.checkout_of = older
    _act(plan, CHECKOUT, f"check out version #{older} again (a new head with its content; #{memory.pk} superseded)")


def _plan_distill(*, plan: RevertPlan, row: OpLog, memory: Memory, sim: Sim) -> None:
    status = sim.status_of(memory)
    if status != Memory.Status.ACTIVE:
        plan.refused = f"rule #{memory.pk} is {status} now; only an active rule's distillation can be undone"
        return
    member_ids = detail_of(row).get("members", [])
    ids = [m for m in member_ids if isinstance(m, int)] if isinstance(member_ids, list) else []
    for other in set(Memory.objects.filter(pk__in=ids).values_list("palace_id", flat=True)):
        if not palace_check(plan=plan, row=row, memory_palace_id=other, what="a member of the distillation"):
            return
    _act(plan, DISTILL_UNDO, f"undo the distillation: members {member_ids} active again, rule #{memory.pk} archived")


def _plan_confidence(*, plan: RevertPlan, row: OpLog, memory: Memory, sim: Sim) -> None:
    detail = detail_of(row)
    before, after = detail.get("confidence_before"), detail.get("confidence")
    if not isinstance(before, int | float) or not isinstance(after, int | float):
        plan.refused = "the op row does not record the confidence before and after"
        return
    if abs(float(before) - float(after)) <= 1e-9:
        plan.refused = f"the op changed nothing (the confidence stayed {after})"
        return
    now = sim.confidence_of(memory)
    if abs(now - float(after)) > 1e-9:
        plan.refused = f"the confidence of memory #{memory.pk} changed since (now {now}, the op left {after})"
        return
    plan.confidence = float(before)
    _act(plan, CONFIDENCE, f"set the confidence of memory #{memory.pk} back ({after} → {before})")


PLANNERS = {
    "memory.forget": _plan_forget,
    "memory.decay": _plan_archive,
    "memory.archive": _plan_archive,
    "memory.restore": _plan_restore,
    "memory.save": _plan_save,
    "memory.update": _plan_correction,
    "memory.checkout": _plan_correction,
    "memory.distill": _plan_distill,
    "memory.report": _plan_confidence,
    "memory.reinforce": _plan_confidence,
}


def plan_list(*, rows: list[OpLog]) -> list[RevertPlan]:
    """Plans for rows to be undone newest first (the caller's order), each seeing what the earlier ones leave.

    A save whose memory the same list then corrected is undone as a whole: the corrections fold into the save's
    revert, which forgets the chain's current head, rather than each correction checking out an older version of
    text that is to go anyway."""
    sim = Sim()
    own = [row for row in rows if row.actor_kind != OpLog.ActorKind.IMPORT]  # imported records fold into nothing
    saved = {row.target_id: row for row in own if row.op == "memory.save" and row.target_id is not None}
    corrected: dict[int, OpLog] = {}  # older version → the correction row in the list
    for row in own:
        older = detail_of(row).get("supersedes") if row.op in ("memory.update", "memory.checkout") else None
        if isinstance(older, int):
            corrected[older] = row
    folded: dict[int, int] = {}  # correction op id → the save op id whose revert covers it
    head_for_save: dict[int, int] = {}  # save op id → the head to forget
    for memory_id, save_row in saved.items():
        current, chain_rows = memory_id, []
        while current in corrected:
            chain_rows.append(corrected[current])
            current = int(corrected[current].target_id or 0)
        if chain_rows:
            head_for_save[save_row.pk] = current
            folded.update({r.pk: save_row.pk for r in chain_rows})
    plans: list[RevertPlan] = []
    for row in rows:
        if row.pk in folded and reverted_by(row.pk) is not None:
            plan = plan_revert(row=row, sim=sim)  # refused: already reverted
        elif row.pk in folded:
            plan = RevertPlan(op_id=row.pk, op=row.op, target_id=row.target_id, action=FOLDED, memory_id=row.target_id)
            plan.palace = _palace(row)
            plan.folded_into = folded[row.pk]
            plan.describe = f"folded into the revert of op #{folded[row.pk]} (the whole chain is forgotten)"
        elif row.pk in head_for_save:
            plan = _plan_save_chain(row=row, head_id=head_for_save[row.pk], sim=sim)
        elif row.op in KIND_PLANNERS:
            plan = RevertPlan(op_id=row.pk, op=row.op, target_id=row.target_id, target=_target(row))
            plan.palace, plan.refused = _palace(row), BULK_MEMORIES_ONLY
        else:
            plan = plan_revert(row=row, sim=sim)
        sim.after(plan)
        plans.append(plan)
    return plans


def _plan_save_chain(*, row: OpLog, head_id: int, sim: Sim) -> RevertPlan:
    plan = RevertPlan(op_id=row.pk, op=row.op, target_id=row.target_id, palace=_palace(row))
    done = reverted_by(row.pk)
    head = Memory.objects.filter(pk=head_id).first()
    if done is not None or head is None:
        plan.refused = f"already reverted (op #{done})" if done else f"memory #{head_id} no longer exists"
        return plan
    if not palace_check(plan=plan, row=row, memory_palace_id=head.palace_id, what=f"memory #{head.pk}"):
        return plan
    status = sim.status_of(head)
    plan.memory_id = head.pk
    if status not in (Memory.Status.ACTIVE, Memory.Status.ARCHIVED):
        plan.refused = f"the current version #{head.pk} of memory #{row.target_id} is {status}; nothing to forget"
        return plan
    _act(plan, FORGET, f"forget memory #{head.pk}, the current version of #{row.target_id} ({status} → forgotten)")
    return plan
