"""Reverting an edit made in the Django admin from the audit console (ops admin.change, admin.add, admin.delete,
admin.action; palace/admin_site.py writes them with each changed field's before and after).

An `admin.change` is reverted by setting each field it changed back to its recorded "before", while every one of
them still holds the "after" (nothing changed since), in one save. Refused, with the field named, where the row does
not hold what is needed: a secret or a body (never recorded), a value cut short on the row, a JSON value (recorded
as text), a form-only field, rows edited inline (the row names them, not their values), or a model whose admin saves
through a service (`revert_refused` on its ModelAdmin says which and why). Additions, deletions and actions are
refused with what to do instead: a delete cascades, and an action's changes are the rows its services wrote.
Needs the model's change permission besides `memory.restore_memory`: reverting an edit is making one.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.contrib import admin
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import IntegrityError, models, transaction

from memory.audit.plan import Applied, RevertPlan, detail_of
from palace.actors import Actor
from palace.admin_site import BODY, MASK, MAX_TEXT, palace_of
from palace.errors import Conflict
from palace.models import OpLog

OPS = ("admin.change", "admin.add", "admin.delete", "admin.action")
FIELDS_BACK = "admin_fields"
MAX_M2M = 50  # the row keeps this many related ids (palace/admin_site.py's _plain)
REFUSED = {
    "admin.add": (
        "an addition is undone by deleting the row on its admin page (a delete may take other rows with it, so the "
        "console does not do it)"
    ),
    "admin.delete": (
        "the deleted row's fields are on the op row, but the rows deleted with it are not: add it again on its admin "
        "page"
    ),
    "admin.action": "an action's changes are the op rows its services wrote beside this one: revert those",
}


def plan_admin_edit(*, plan: RevertPlan, row: OpLog) -> None:
    if row.op in REFUSED:
        plan.refuse(REFUSED[row.op])
        return
    detail = detail_of(row)
    try:
        model = apps.get_model(str(detail.get("model", "")))
    except (LookupError, ValueError):
        plan.refuse(f"the model {detail.get('model')!r} is no longer installed")
        return
    opts = model._meta
    plan.needs = f"{opts.app_label}.change_{opts.model_name}"
    plan.target = f"{opts.verbose_name} #{row.target_id}"
    model_admin: Any = admin.site._registry.get(model)
    obj = model._default_manager.filter(pk=row.target_id).first() if row.target_id is not None else None
    changed = detail.get("changed")
    if detail.get("inlines"):
        models_ = sorted({str(i.get("model")) for i in detail["inlines"] if isinstance(i, dict)})
        plan.refuse(f"the edit also changed rows inline ({', '.join(models_)}), whose values the op row does not keep")
    elif model_admin is None:
        plan.refuse(f"{opts.verbose_name_plural} are no longer in the admin")
    elif getattr(model_admin, "revert_refused", ""):
        plan.refuse(str(model_admin.revert_refused))
    elif not isinstance(changed, dict) or not changed:
        plan.refuse("the edit saved no field (only its reason was recorded); nothing to revert")
    elif obj is None:
        plan.refuse(f"{opts.verbose_name} #{row.target_id} no longer exists")
    else:
        _plan_fields(plan=plan, model=model, obj=obj, changed=changed)


def _plan_fields(*, plan: RevertPlan, model: type[models.Model], obj: models.Model, changed: dict[str, Any]) -> None:
    back: dict[str, Any] = {}
    for name, pair in changed.items():
        before, after = (pair.get("before"), pair.get("after")) if isinstance(pair, dict) else (None, None)
        field, why = _field(model, name, before, after)
        if field is None:
            plan.refuse(why)
            return
        try:
            now_value, after_value = _current(obj, field), _value(field, after)
            _value(field, before)
        except (ValidationError, TypeError, ValueError):
            plan.refuse(f"{name}: the recorded value cannot be read back as this field's value")
            return
        if now_value != after_value:
            plan.refuse(f"{name} changed since (it no longer holds what the edit left); nothing to take back")
            return
        back[name] = before
    plan.data = {"model": model._meta.label_lower, "pk": obj.pk, "back": back, "after": {n: changed[n] for n in back}}
    said = "; ".join(f"{n}: {_short(changed[n].get('after'))} → {_short(v)}" for n, v in back.items())
    plan.act(FIELDS_BACK, f"set {model._meta.verbose_name} #{obj.pk} back ({said})")


def _field(model: type[models.Model], name: str, before: Any, after: Any) -> tuple[Any, str]:
    """The model field `name` if its recorded values can be put back, else (None, why not)."""
    try:
        field: Any = model._meta.get_field(name)
    except FieldDoesNotExist:
        return None, f"{name} is a field of the form, not of the model; change it back on the page"
    if not (field.concrete or field.many_to_many) or not field.editable:
        return None, f"{name} is not a field the admin edits"
    if MASK in (before, after) or BODY in (before, after):
        return None, f"{name} is a secret or a body, which the op row does not keep; change it back on the page"
    if isinstance(field, models.JSONField):
        return None, f"the op row keeps only a text form of {name}; change it back on the page"
    for value in (before, after):
        if isinstance(value, str) and len(value) >= MAX_TEXT and value.endswith("…"):
            return None, f"{name}'s value was cut short on the op row; change it back on the page"
        if field.many_to_many and isinstance(value, list) and len(value) >= MAX_M2M:
            return None, f"{name} held more related rows than the op row lists; change it back on the page"
    return field, ""


def _value(field: Any, raw: Any) -> Any:
    """A recorded value as the field holds it (related rows by primary key; many-to-many as a set)."""
    if field.many_to_many:
        return {str(v) for v in raw or []}
    if raw is None:
        return None
    return field.target_field.to_python(raw) if field.is_relation else field.to_python(raw)


def _current(obj: models.Model, field: Any) -> Any:
    if field.many_to_many:
        return {str(pk) for pk in getattr(obj, field.name).values_list("pk", flat=True)}
    return getattr(obj, field.attname)


def _short(value: Any) -> str:
    text = "—" if value in (None, "") else str(value)
    return text if len(text) <= 40 else text[:39] + "…"


def apply_admin_edit(*, plan: RevertPlan, row: OpLog, actor: Actor, reason: str) -> Applied:
    """Set the fields back in one save, the row locked and checked again first (inside the caller's transaction)."""
    model = apps.get_model(plan.data["model"])
    obj = model._default_manager.select_for_update().get(pk=plan.data["pk"])
    concrete: list[str] = []
    for name, before in plan.data["back"].items():
        field: Any = model._meta.get_field(name)
        if _current(obj, field) != _value(field, plan.data["after"][name].get("after")):
            raise Conflict(f"{name} changed meanwhile; look again")
        if field.many_to_many:
            getattr(obj, name).set(sorted(_value(field, before)))
        else:
            setattr(obj, field.attname, _value(field, before))
            concrete.append(field.attname)
    if concrete:
        try:
            with transaction.atomic():
                obj.save(update_fields=concrete)
        except IntegrityError as exc:  # e.g. a unique value another row has taken since
            raise Conflict(f"the database refuses the old values now: {str(exc).splitlines()[0]}") from None
    palace = palace_of(obj)
    detail = {
        "model": plan.data["model"],
        "before": {n: plan.data["after"][n].get("after") for n in plan.data["back"]},
        "after": dict(plan.data["back"]),
    }
    return Applied(target_kind=str(model._meta.model_name)[:32], target_id=row.target_id, palace=palace, detail=detail)
