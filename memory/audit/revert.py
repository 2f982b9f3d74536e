"""Restoring from the audit console (staff in the Django admin): bring back a forgotten or archived memory, check out
an earlier version, undo a distillation, revert one op row, and revert everything one actor (a person or a token)
did in a time range, after a preview.

Every path needs `memory.restore_memory` (checked here too, not only by the page), a reason, and runs as the
system carrying the staff user (`acting_as_system("admin:<name>")`, palace/rls.py): staff are not members of the
palaces they repair. The changes go through the existing services (memory_restore, memory_forget, memory_checkout,
distill_undo), so each writes its usual op row, with the staff actor and the reason; a revert adds a
`memory.revert` row naming the op row it undid (so it is not undone twice), a bulk revert a `memory.bulk_revert` row
with what it selected and how it went. History is never rewritten.

One op row may also be a change to a project's members, an entity, a curated profile or handoff version, or an edit
made in the admin: those are planned and applied by their modules (members.py, entities.py, versions.py,
admin_edits.py), need the permission their plan names (`RevertPlan.needs`, e.g. `palace.change_membership`) besides
`memory.restore_memory`, and get the same `memory.revert` row, on what they changed, with its before and after. A
bulk revert covers memories only (revert_plan.plan_list).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memory.audit import admin_edits, entities, members, versions
from memory.audit import plan as kinds
from memory.audit import revert_plan as rp
from memory.audit.plan import Applied
from memory.jobs import DistillRevert, distill_revert
from memory.lifecycle import memory_archive, memory_checkout, memory_forget, memory_lock, memory_restore
from memory.models import Memory
from memory.text import clean_line
from palace.actors import Actor
from palace.errors import AtriumError, Conflict, InvalidInput, NotFound, PermissionDenied
from palace.models import OpLog
from palace.oplog import oplog_write
from palace.rls import acting_as_system

PERMISSION = "memory.restore_memory"
SOURCE = "panel"  # the admin is a person's door, like the panel
MAX_BULK = 2000  # op rows one bulk revert may cover; a wider selection is refused (narrow the time range)


def staff_actor(user: Any) -> Actor:
    """Staff act as the system carrying their user (the same as memory/admin/memories.py's actions)."""
    return Actor(user=user, system="admin")


def _require_revert_permission(staff: Any) -> None:
    if not (staff is not None and staff.is_active and staff.is_staff and staff.has_perm(PERMISSION)):
        raise PermissionDenied("restoring needs the “Can restore memories in the admin” permission")


def _checked(*, staff: Any, reason: str) -> str:
    _require_revert_permission(staff)
    reason = clean_line(reason, "reason", 500)
    if not reason:
        raise InvalidInput("say why: a reason is required", field="reason")
    return reason


def _system(staff: Any) -> Any:
    return acting_as_system(f"admin:{staff.get_username()}")


def memory_restore_as_staff(*, memory_id: int, staff: Any, reason: str) -> Memory:
    """A forgotten or archived memory back to active (memory_restore: op `memory.restore`)."""
    reason = _checked(staff=staff, reason=reason)
    with _system(staff):
        return memory_restore(memory_id=memory_id, actor=staff_actor(staff), reason=reason)


def memory_checkout_as_staff(*, memory_id: int, staff: Any, reason: str, now: datetime | None = None) -> Memory:
    """An earlier version current again (memory_checkout, as the REST and MCP checkout: op `memory.checkout`)."""
    reason = _checked(staff=staff, reason=reason)
    with _system(staff):
        return memory_checkout(memory_id=memory_id, actor=staff_actor(staff), reason=reason, source=SOURCE, now=now)


def distill_revert_as_staff(*, rule_id: int, staff: Any, reason: str, now: datetime | None = None) -> DistillRevert:
    """A distillation undone (distill_undo: ops `memory.distill_undo` and `memory.unsupersede`)."""
    reason = _checked(staff=staff, reason=reason)
    with _system(staff):
        return distill_revert(rule_id=rule_id, actor=staff_actor(staff), reason=reason, now=now)


# --- reverting op rows ---------------------------------------------------------------------------------------------


def op_revert_preview(*, op_id: int, staff: Any) -> rp.RevertPlan:
    """What reverting this op row would do, or why it would not (nothing changes)."""
    _require_revert_permission(staff)
    with _system(staff):
        row = OpLog.objects.filter(pk=op_id).first()
        if row is None:
            raise NotFound("op row not found")
        return rp.plan_revert(row=row, staff=staff)


def op_revert(*, op_id: int, staff: Any, reason: str, now: datetime | None = None) -> rp.RevertPlan:
    """Undo one op row with a new change (the module docstring); refused with InvalidInput saying why when a revert
    is not meaningful for it, and with PermissionDenied when its kind needs a permission the staff member lacks."""
    reason = _checked(staff=staff, reason=reason)
    with _system(staff), transaction.atomic():
        row = OpLog.objects.select_for_update(of=("self",)).select_related("actor_user").filter(pk=op_id).first()
        if row is None:
            raise NotFound("op row not found")
        plan = rp.plan_revert(row=row, staff=staff)
        if plan.missing_permission:
            raise PermissionDenied(plan.refused)
        if not plan.doable:
            raise InvalidInput(f"op #{row.pk} ({row.op}) cannot be reverted: {plan.refused}", field="op")
        actor, moment = staff_actor(staff), now or timezone.now()
        plan.revert_op_id = _apply(plan=plan, row=row, actor=actor, reason=reason, now=moment)
    return plan


# The other kinds' appliers, by the action their planner chose.
APPLIERS = {
    **dict.fromkeys(
        (members.ROLE_BACK, members.ADDITION_BACK, members.REMOVAL_BACK, members.TRANSFER_BACK), members.apply_member
    ),
    **dict.fromkeys((entities.SPLIT, entities.RENAME_BACK, entities.ALIASES_BACK), entities.apply_entity),
    **dict.fromkeys((versions.PROFILE_BACK, versions.HANDOFF_BACK), versions.apply_version),
    admin_edits.FIELDS_BACK: admin_edits.apply_admin_edit,
}


def _apply(*, plan: rp.RevertPlan, row: OpLog, actor: Actor, reason: str, now: datetime, bulk: str = "") -> int:
    """Carry out one plan inside the caller's transaction, then write the `memory.revert` row (its id returned)."""
    note = f"{reason} (revert of op #{row.pk})"
    applier = APPLIERS.get(plan.action)
    if applier is not None:
        done: Applied = applier(plan=plan, row=row, actor=actor, reason=note)
        revert = oplog_write(
            op=kinds.REVERT_OP,
            actor=actor,
            palace=done.palace,
            target_kind=done.target_kind,
            target_id=done.target_id,
            reason=reason,
            detail={"reverts": row.pk, "op": row.op, "action": plan.action, **done.detail},
        )
        return revert.pk
    assert plan.memory_id is not None
    detail: dict[str, Any] = {"reverts": row.pk, "op": row.op, "action": plan.action, "memory": plan.memory_id}
    if plan.action == kinds.RESTORE:
        memory_restore(memory_id=plan.memory_id, actor=actor, reason=note)
    elif plan.action == kinds.FORGET:
        memory_forget(memory_id=plan.memory_id, actor=actor, reason=note)
    elif plan.action == kinds.ARCHIVE:
        memory_archive(memory_id=plan.memory_id, actor=actor, reason=note)
    elif plan.action == kinds.CHECKOUT:
        assert plan.checkout_of is not None
        new = memory_checkout(memory_id=plan.checkout_of, actor=actor, reason=note, source=SOURCE, now=now)
        detail["new_memory"] = new.pk
    elif plan.action == kinds.DISTILL_UNDO:
        distill_revert(rule_id=plan.memory_id, actor=actor, reason=note, now=now)
    elif plan.action == kinds.CONFIDENCE and plan.confidence is not None:
        memory = memory_lock(memory_id=plan.memory_id, actor=actor)
        detail["before"], detail["after"] = {"confidence": memory.confidence}, {"confidence": plan.confidence}
        memory.confidence = plan.confidence
        memory.save(update_fields=["confidence", "updated_at"])
    if bulk:
        detail["bulk"] = bulk
    revert = oplog_write(
        op=kinds.REVERT_OP,
        actor=actor,
        palace=Memory.objects.select_related("palace").get(pk=plan.memory_id).palace,
        target_kind="memory",
        target_id=plan.memory_id,
        reason=reason,
        detail=detail,
    )
    return revert.pk


# --- bulk: everything one actor did in a time range ----------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """Whose changes, when: a person (every row they wrote, in a session or through any of their tokens) or one
    token; `since` inclusive, `until` exclusive."""

    since: datetime
    until: datetime
    user_id: int | None = None
    token_id: int | None = None

    def describe(self) -> str:
        who = f"token #{self.token_id}" if self.token_id is not None else f"user #{self.user_id}"
        return f"{who} from {self.since.isoformat()} to {self.until.isoformat()}"

    def as_detail(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "token_id": self.token_id,
            "since": self.since.isoformat(),
            "until": self.until.isoformat(),
        }


@dataclass
class BulkPreview:
    selection: Selection
    plans: list[rp.RevertPlan] = field(default_factory=list)

    @property
    def changes(self) -> list[rp.RevertPlan]:
        return [p for p in self.plans if p.action]

    @property
    def refused(self) -> list[rp.RevertPlan]:
        return [p for p in self.plans if not p.action]


@dataclass
class BulkResult:
    selection: Selection
    done: list[rp.RevertPlan] = field(default_factory=list)
    refused: list[rp.RevertPlan] = field(default_factory=list)
    failed: list[tuple[rp.RevertPlan, str]] = field(default_factory=list)
    op_id: int | None = None  # the memory.bulk_revert row


def _selected(selection: Selection) -> list[OpLog]:
    """The actor's op rows in the range, newest first (the order they are undone), reverts themselves excluded."""
    if (selection.user_id is None) == (selection.token_id is None):
        raise InvalidInput("name either a user or a token", field="actor")
    if selection.until <= selection.since:
        raise InvalidInput("the end of the range must be after its start", field="until")
    if selection.token_id is not None:
        who = Q(actor_token_id=selection.token_id)
    else:
        who = Q(actor_user_id=selection.user_id, actor_kind__in=["user", "token"])
    rows = (
        OpLog.objects.filter(who, created_at__gte=selection.since, created_at__lt=selection.until)
        .exclude(op__in=[kinds.REVERT_OP, kinds.BULK_OP])
        .select_related("palace__personal_owner")  # each plan names its row's palace
        .order_by("-created_at", "-pk")
    )
    found = list(rows[: MAX_BULK + 1])
    if len(found) > MAX_BULK:
        raise InvalidInput(f"more than {MAX_BULK} op rows in that range; narrow it", field="since")
    return found


def bulk_revert_preview(*, selection: Selection, staff: Any) -> BulkPreview:
    """Every op row the selection covers, with what reverting it would do or why it would be left (nothing
    changes)."""
    _require_revert_permission(staff)
    with _system(staff):
        return BulkPreview(selection=selection, plans=rp.plan_list(rows=_selected(selection)))


def bulk_revert_apply(*, selection: Selection, staff: Any, reason: str, now: datetime | None = None) -> BulkResult:
    """Revert the selection, newest first, each row in its own transaction (one that cannot be reverted any more
    is reported and does not stop the rest); the plans are computed afresh, as the preview computed them."""
    reason = _checked(staff=staff, reason=reason)
    now = now or timezone.now()
    actor = staff_actor(staff)
    result = BulkResult(selection=selection)
    bulk = f"{selection.describe()} by {staff.get_username()} at {now.isoformat()}"
    with _system(staff):
        rows = _selected(selection)
        by_id = {row.pk: row for row in rows}
        plans = rp.plan_list(rows=rows)
        for plan in plans:
            if not plan.action:
                result.refused.append(plan)
            elif plan.action != kinds.FOLDED:
                run = _Run(actor=actor, reason=reason, now=now, bulk=bulk)
                _bulk_one(plan=plan, plans=plans, by_id=by_id, run=run, out=result)
        with transaction.atomic():
            summary = oplog_write(
                op=kinds.BULK_OP,
                actor=actor,
                reason=reason,
                detail={
                    **selection.as_detail(),
                    "done": [p.op_id for p in result.done],
                    "refused": [p.op_id for p in result.refused],
                    "failed": [p.op_id for p, _ in result.failed],
                },
            )
        result.op_id = summary.pk
    return result


@dataclass(frozen=True)
class _Run:
    actor: Actor
    reason: str
    now: datetime
    bulk: str


def _bulk_one(
    *, plan: rp.RevertPlan, plans: list[rp.RevertPlan], by_id: dict[int, OpLog], run: _Run, out: BulkResult
) -> None:
    """One plan in its own transaction, with the rows folded into it marked reverted only if it went through."""
    folded = [p for p in plans if p.folded_into == plan.op_id]
    try:
        with transaction.atomic():
            # Another bulk run over the same rows may have got there first: lock the row, then look.
            list(OpLog.objects.select_for_update().filter(pk=plan.op_id).values_list("pk", flat=True))
            done = rp.reverted_by(plan.op_id)
            if done is not None:
                raise Conflict(f"already reverted (op #{done})")
            _apply(plan=plan, row=by_id[plan.op_id], actor=run.actor, reason=run.reason, now=run.now, bulk=run.bulk)
            for f in folded:
                _record_folded(plan=f, row=by_id[f.op_id], actor=run.actor, reason=run.reason, bulk=run.bulk)
    except AtriumError as exc:  # the state moved under the plan (a Conflict from a service, a refusal)
        out.failed.append((plan, exc.message))
        out.failed.extend((f, f"folded into op #{plan.op_id}, which failed") for f in folded)
        return
    out.done.append(plan)
    out.done.extend(folded)


def _record_folded(*, plan: rp.RevertPlan, row: OpLog, actor: Actor, reason: str, bulk: str) -> None:
    oplog_write(
        op=kinds.REVERT_OP,
        actor=actor,
        palace=row.palace,
        target_kind="memory",
        target_id=row.target_id,
        reason=reason,
        detail={"reverts": row.pk, "op": row.op, "action": kinds.FOLDED, "note": plan.describe, "bulk": bulk},
    )
