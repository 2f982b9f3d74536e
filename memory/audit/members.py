"""Reverting a change to a project's members from the audit console: an addition, a role change, a removal, a member
leaving, an ownership transfer (ops member.set, member.remove, member.leave, member.transfer; palace/membership.py and
palace/services.py write them).

The planner says what undoing the row would do, or why not; the apply goes through the palace's own services
(member_set, member_remove), so each step writes its usual `member.*` op row with the staff actor. A revert acts
only while the membership is as the op left it (nothing changed since) and never leaves a project without an owner,
the rule every membership change keeps. It needs `palace.change_membership` besides `memory.restore_memory`:
giving someone access to a palace is more than restoring a memory.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model

from memory.audit.plan import Applied, RevertPlan, detail_of
from palace.actors import Actor
from palace.errors import Conflict
from palace.models import Membership, OpLog, Palace
from palace.services import member_remove, member_set

PERMISSION = "palace.change_membership"
OPS = ("member.set", "member.remove", "member.leave", "member.transfer")
ROLE_BACK = "member_role"  # set a member's role back
ADDITION_BACK = "member_remove"  # take an addition back
REMOVAL_BACK = "member_add"  # add a removed member back with their role
TRANSFER_BACK = "member_transfer"  # the ownership back to who handed it over
OWNER = Membership.Role.OWNER
LAST_OWNER = "it would leave the project without an owner (make another member owner first)"


def _role_of(palace: Palace, user_id: int) -> str | None:
    # A pending invitation is no role: it grants nothing until accepted.
    accepted = Membership.objects.filter(palace=palace, user_id=user_id, state=Membership.State.ACCEPTED)
    return accepted.values_list("role", flat=True).first()


def _another_owner(palace: Palace, user_id: int) -> bool:
    owners = Membership.objects.filter(palace=palace, role=OWNER, state=Membership.State.ACCEPTED)
    return owners.exclude(user_id=user_id).exists()


def _now(role: str | None) -> str:
    return role or "no longer a member"


def plan_member(*, plan: RevertPlan, row: OpLog) -> None:
    plan.needs = PERMISSION
    user = get_user_model().objects.filter(pk=row.target_id).first() if row.target_id is not None else None
    palace = Palace.objects.filter(pk=row.palace_id).first() if row.palace_id is not None else None
    if user is None or palace is None:
        plan.refuse("the op row's user or project no longer exists")
        return
    name = user.get_username()
    plan.target = f"{name} in {palace.label}"
    current = _role_of(palace, user.pk)
    detail = detail_of(row)
    role, previous = detail.get("role"), detail.get("previous")
    plan.data = {"palace": palace.pk, "user": user.pk, "expect": current}
    if row.op == "member.set":
        if previous == role:
            plan.refuse(f"the op changed nothing ({name} stayed {role})")
        elif current != role:
            plan.refuse(f"{name} is {_now(current)} now, not {role} as the op left them; nothing to take back")
        elif role == OWNER and not _another_owner(palace, user.pk):
            plan.refuse(f"{name} is the project's only owner now: {LAST_OWNER}")
        elif previous is None:
            plan.act(ADDITION_BACK, f"remove {name} from {palace.label} again (added as {role})")
        elif previous in Membership.Role.values:
            plan.data["role"] = previous
            plan.act(ROLE_BACK, f"set {name}'s role in {palace.label} back ({role} → {previous})")
        else:
            plan.refuse("the op row does not record the role before the change")
    elif row.op in ("member.remove", "member.leave"):
        if current is not None:
            plan.refuse(f"{name} is a member again ({current}); nothing to add back")
        elif role not in Membership.Role.values:
            plan.refuse(
                f"the op row does not record the role {name} had (this removal was written without it): add them "
                "again on the project's page, with the role they need"
            )
        else:
            plan.data["role"] = role
            plan.act(REMOVAL_BACK, f"add {name} back to {palace.label} as {role}")
    else:
        _plan_transfer(plan=plan, row=row, palace=palace, name=name, current=current, previous=previous)


def _plan_transfer(
    *, plan: RevertPlan, row: OpLog, palace: Palace, name: str, current: str | None, previous: Any
) -> None:
    """The transfer made `name` owner and its actor (the owner then) an editor: both go back."""
    giver = row.actor_user
    if giver is None:
        plan.refuse("the op row does not name who handed the ownership over")
        return
    giver_role = _role_of(palace, giver.pk)
    if current != OWNER:
        plan.refuse(f"{name} is {_now(current)} now, not the owner the transfer made them")
    elif giver_role != Membership.Role.EDITOR:
        plan.refuse(f"{giver.get_username()} is {_now(giver_role)} now, not the editor the transfer left")
    elif previous not in Membership.Role.values:
        plan.refuse(f"the op row does not record the role {name} had before")
    else:
        plan.data.update(role=previous, giver=giver.pk, giver_expect=giver_role)
        plan.act(TRANSFER_BACK, f"make {giver.get_username()} owner again and {name} {previous} again")


def apply_member(*, plan: RevertPlan, row: OpLog, actor: Actor, reason: str) -> Applied:
    """Carry out a member plan inside the caller's transaction (the memberships locked and checked again first).
    The services write their `member.*` rows without a reason field; the revert's own row carries `reason`."""
    User = get_user_model()
    palace = Palace.objects.get(pk=plan.data["palace"])
    user = User.objects.get(pk=plan.data["user"])
    list(Membership.objects.select_for_update().filter(palace=palace).values_list("pk", flat=True))
    current = _role_of(palace, user.pk)
    if current != plan.data["expect"]:
        raise Conflict(f"{user.get_username()}'s membership changed meanwhile ({_now(current)}); look again")
    if plan.action == ADDITION_BACK:
        member_remove(palace=palace, user=user, actor=actor)
        after = None
    elif plan.action == TRANSFER_BACK:
        giver = User.objects.get(pk=plan.data["giver"])
        if _role_of(palace, giver.pk) != plan.data["giver_expect"]:
            raise Conflict(f"{giver.get_username()}'s membership changed meanwhile; look again")
        member_set(palace=palace, user=giver, role=OWNER, actor=actor)
        member_set(palace=palace, user=user, role=plan.data["role"], actor=actor)
        after = plan.data["role"]
    else:  # ROLE_BACK, REMOVAL_BACK
        member_set(palace=palace, user=user, role=plan.data["role"], actor=actor)
        after = plan.data["role"]
    detail = {"user": user.get_username(), "before": {"role": current}, "after": {"role": after}}
    return Applied(target_kind="user", target_id=user.pk, palace=palace, detail=detail)
