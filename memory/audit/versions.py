"""Reverting a new version of a curated profile or a handoff from the audit console (ops profile.edit,
profile.rollback, handoff.save, handoff.checkout; memory.context writes them).

Versions are append-only, so the revert appends one more: the text the op replaced, as the version after the
current one (`rolled_back_from` / `restored_from` name the version copied, as a rollback does), and only while the
version the op made is still the current one. A profile's first edit is reverted by an empty version (an empty
profile is no profile); a handoff's first save is refused, since a handoff cannot be empty. A handoff stays its
person's: the version is appended to their handoff, with the staff member named on the revert's op row.

Written here rather than through memory.context's checkout services, which sit on the same step of the memory
package (they cannot be imported from here) and act for the person calling them. The unique version number is the
lock, as there: a concurrent write gets a Conflict, never a second row with one number.
Needs `memory.change_profileversion` or `memory.change_handoffversion` besides `memory.restore_memory`.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from memory.audit.plan import Applied, RevertPlan, detail_of, palace_check
from memory.models import HandoffVersion, ProfileVersion
from palace.actors import Actor
from palace.errors import Conflict
from palace.models import OpLog

OPS = ("profile.edit", "profile.rollback", "handoff.save", "handoff.checkout")
PROFILE_BACK = "profile_back"
HANDOFF_BACK = "handoff_back"
PERMISSIONS = {PROFILE_BACK: "memory.change_profileversion", HANDOFF_BACK: "memory.change_handoffversion"}


def _versions(model: Any, made: Any) -> Any:
    """The versions of the same text as `made`: a palace's profile, or one person's handoff in a palace."""
    if model is HandoffVersion:
        return HandoffVersion.objects.filter(palace_id=made.palace_id, user_id=made.user_id)
    return ProfileVersion.objects.filter(palace_id=made.palace_id)


def plan_version(*, plan: RevertPlan, row: OpLog) -> None:
    handoff = row.op.startswith("handoff.")
    model: Any = HandoffVersion if handoff else ProfileVersion
    action = HANDOFF_BACK if handoff else PROFILE_BACK
    plan.needs = PERMISSIONS[action]
    related = ("palace", "user") if handoff else ("palace",)
    made = model.objects.select_related(*related).filter(pk=row.target_id).first() if row.target_id else None
    if made is None:
        plan.refuse("the version this op made no longer exists")
        return
    if not palace_check(plan=plan, row=row, memory_palace_id=made.palace_id, what=f"version #{made.pk}"):
        return
    if handoff:
        what = plan.target = f"{made.user.get_username()}'s handoff in {made.palace.label}"
    else:
        what, plan.target = "the curated profile", f"the curated profile of {made.palace.label}"
    current = _versions(model, made).order_by("-version").values_list("version", flat=True).first()
    before = detail_of(row).get("from_version", made.version - 1)
    if current != made.version:
        plan.refuse(
            f"{what} moved on since (now version {current}; the op made version {made.version}): check out the "
            "version you want from its history"
        )
    elif not isinstance(before, int) or before < 0:
        plan.refuse("the op row does not record the version before it")
    elif handoff and before == 0:
        plan.refuse("this was the first handoff: there is none before it to return to, and a handoff is never empty")
    else:
        plan.data = {"model": "handoff" if handoff else "profile", "made": made.pk, "back_to": before}
        text = "empty, as before its first version" if before == 0 else f"with version {before}'s text"
        plan.act(action, f"{what}: a new version {made.version + 1}, {text} (version {made.version} is kept)")


def apply_version(*, plan: RevertPlan, row: OpLog, actor: Actor, reason: str) -> Applied:
    """Append the version (the module docstring); the detail of the revert's op row, as a rollback's."""
    handoff = plan.data["model"] == "handoff"
    model: Any = HandoffVersion if handoff else ProfileVersion
    made = model.objects.select_related("palace").get(pk=plan.data["made"])
    versions = _versions(model, made)
    current = versions.select_for_update().order_by("-version").first()
    if current is None or current.pk != made.pk:
        raise Conflict("the version changed meanwhile (a new one was saved); look again")
    back_to = int(plan.data["back_to"])
    old = versions.filter(version=back_to).first() if back_to else None
    fields: dict[str, Any]
    if handoff:
        fields = {"user_id": made.user_id, "restored_from": back_to}
        if old is not None:
            texts = ("doing", "next_steps", "open_questions", "files")
            fields.update({name: getattr(old, name) for name in texts})
    else:
        fields = {"content": old.content if old is not None else "", "rolled_back_from": back_to or None}
        fields["created_by_id"] = actor.user_id
    try:
        with transaction.atomic():
            new = model.objects.create(palace=made.palace, version=current.version + 1, **fields)
    except IntegrityError:  # another save took the number between the lock and the insert
        raise Conflict("the version changed meanwhile (a new one was saved); look again") from None
    detail = {
        "version": new.version,
        "from_version": current.version,
        "copied": back_to,
        "before": {"version": current.version},
        "after": {"version": new.version, "text of version": back_to},
    }
    return Applied(target_kind="handoff" if handoff else "profile", target_id=new.pk, palace=made.palace, detail=detail)
