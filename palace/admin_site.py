"""Every change made in the Django admin is on the op log, with the staff member who made it and their reason.

One mechanism for every model, including the third-party ones (users, groups, django-celery-beat's schedules) and any
registered later: the admin site (`AuditedAdminSite`, installed as Django's default site by
`palace.apps.AtriumAdminConfig`) registers each model with its ModelAdmin class mixed with `AuditedModelAdmin`.

Where the row is written: Django's admin calls `log_addition`, `log_change` and `log_deletions` once per object in
every path that changes something (the add and change forms, the delete page, the bulk delete, the password form,
list_editable), inside the view's transaction and after the change is saved (before it for deletions). Those three
write the op row, so the row commits or rolls back with the change. Any other changelist action is wrapped
(`get_actions`): it runs in a transaction that also writes one `admin.action` row naming the selected objects.

The reason is required: the change and add forms get a required `reason` field (a form error, nothing saved), the
delete page and the bulk-delete confirmation ask for it (refused without it), and the actions bar has it (an action
without one is refused with a message). Should any path reach the ledger without a reason, it raises
PermissionDenied inside the transaction, so the change is undone rather than left unaccounted for.

A save that changes no field is still recorded (with an empty `changed`): the staff member stated a reason for it.
The detail holds what changed (field: before/after, changed fields only; an inline's added, changed and deleted
rows); secrets (passwords, token hashes, API keys, encrypted values) are masked and memory bodies are not copied, so
the audit trail can be read without the permission to see bodies. The actor is the staff member acting as the admin
(`Actor(user=staff, system="admin")`: actor_kind "system", actor_name "admin", actor_user the person), as the memory
admin's forget/restore actions record it.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.options import ActionLocation
from django.contrib.admin.utils import flatten_fieldsets
from django.core import checks
from django.core.exceptions import PermissionDenied
from django.db import models, transaction
from django.http import HttpRequest, HttpResponse, QueryDict
from django.utils.translation import gettext_lazy as _

from palace.actors import Actor
from palace.models import Palace
from palace.oplog import oplog_write

REASON = "reason"
REASON_REQUIRED = _("A reason is required: every change made in the admin is recorded on the op log with it.")
REASON_HELP = _("Why this change? Required; recorded on the op log with your name.")
# Field names whose values never reach the ledger (a substring match on the lower-cased name).
SECRET_MARKS = ("password", "hash", "api_key", "secret", "encrypted")
# What was remembered: recorded as changed, never copied (the audit trail is readable without the body permission).
BODY_FIELDS = frozenset({"content", "placard", "search_text", "epitaph", "meta"})
MASK = "(secret, not recorded)"
BODY = "(body, not recorded)"
MAX_IDS = 1000
MAX_TEXT = 200


def admin_actor(request: HttpRequest) -> Actor:
    """The staff member, acting as the admin (they need not be a member of the palace they change)."""
    user: Any = request.user
    return Actor(user=user, system="admin")


def admin_reason(request: HttpRequest) -> str:
    """The reason posted with the change: the form's field, or the action bar's (prefixed on a change form)."""
    for name in (REASON, f"{ActionLocation.CHANGE_FORM.value}-{REASON}"):
        reason = str(request.POST.get(name, "")).strip()
        if reason:
            return reason
    return ""


class ReasonField(forms.CharField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", True)
        super().__init__(
            label=_("Reason"),
            help_text=REASON_HELP,
            max_length=2000,
            widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
            error_messages={"required": REASON_REQUIRED},
            **kwargs,
        )


class ReasonActionForm(helpers.ActionForm):
    # Checked by the action wrapper, not here: the changelist form is also posted by list_editable and search.
    reason = forms.CharField(
        label=_("Reason"),
        required=False,
        max_length=2000,
        widget=forms.TextInput(attrs={"size": 40, "placeholder": _("reason (required)")}),
    )


def _plain(value: Any) -> Any:
    """A JSON-able, short form of a form or model value: related objects by primary key."""
    if isinstance(value, models.Model):
        return _plain(value.pk)
    if isinstance(value, models.QuerySet | list | tuple | set | frozenset):
        return [_plain(v) for v in list(value)[:50]]
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    text = str(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _recorded(name: str, value: Any) -> Any:
    lowered = name.lower()
    if any(mark in lowered for mark in SECRET_MARKS):
        return MASK
    if lowered in BODY_FIELDS:
        return BODY
    return _plain(value)


def form_changes(form: forms.BaseForm) -> dict[str, dict[str, Any]]:
    """Changed fields only: name → {before, after}, secrets masked, bodies not copied."""
    changed: dict[str, dict[str, Any]] = {}
    for name in form.changed_data:
        if name == REASON:
            continue
        before = form[name].initial if name in form.fields else None
        after = getattr(form, "cleaned_data", {}).get(name)
        changed[name] = {"before": _recorded(name, before), "after": _recorded(name, after)}
    return changed


def formset_changes(formsets: Iterable[Any] | None) -> list[dict[str, Any]]:
    """The inlines' saved changes (Django sets new/changed/deleted_objects when it saves a formset)."""
    out: list[dict[str, Any]] = []
    for formset in formsets or ():
        entry = {
            "model": formset.model._meta.label_lower,
            "added": [_plain(o) for o in getattr(formset, "new_objects", [])],
            "changed": [
                {"id": _plain(o), "fields": sorted(f for f in fields if f != REASON)}
                for o, fields in getattr(formset, "changed_objects", [])
            ],
            "deleted": [_plain(o) for o in getattr(formset, "deleted_objects", [])],
        }
        if entry["added"] or entry["changed"] or entry["deleted"]:
            out.append(entry)
    return out


def snapshot(obj: models.Model) -> dict[str, Any]:
    """A deleted row's fields, as recorded (secrets masked, bodies not copied)."""
    return {f.attname: _recorded(f.name, getattr(obj, f.attname)) for f in obj._meta.concrete_fields}


def palace_of(obj: Any) -> Palace | None:
    if isinstance(obj, Palace):
        return obj if obj.pk is not None and Palace.objects.filter(pk=obj.pk).exists() else None
    palace_id = getattr(obj, "palace_id", None)
    return Palace.objects.filter(pk=palace_id).first() if palace_id is not None else None


def _int_pk(pk: Any) -> int | None:
    return pk if isinstance(pk, int) and not isinstance(pk, bool) else None


def audit_write(
    request: HttpRequest, *, op: str, model: type[models.Model], obj: Any = None, detail: dict[str, Any]
) -> None:
    """One op row for an admin change. Refuses (inside the change's transaction) when there is no reason."""
    reason = admin_reason(request)
    if not reason:
        raise PermissionDenied(str(REASON_REQUIRED))
    palace = detail.pop("_palace", None)
    oplog_write(
        op=op,
        actor=admin_actor(request),
        palace=palace_of(obj) if obj is not None else palace,
        target_kind=str(model._meta.model_name)[:32],
        target_id=_int_pk(obj.pk) if obj is not None else None,
        reason=reason,
        detail={
            "model": model._meta.label_lower,
            **({"object": _plain(str(obj))} if obj is not None else {}),
            **detail,
        },
    )


class AuditedModelAdmin(admin.ModelAdmin):
    """The audit mixed into every registered ModelAdmin (see the module docstring). Subclass it or not: the site
    mixes it in at registration."""

    # (A ModelAdmin that saves through a service sets `revert_refused` to say why the audit console must not revert
    # its edits by setting the fields back, memory/audit/admin_edits.py. Not defined here: this class comes first in
    # the mixed class, so its attributes would hide the ModelAdmin's own.)
    action_form = ReasonActionForm
    delete_confirmation_template = "admin/atrium/delete_confirmation.html"
    delete_selected_confirmation_template = "admin/atrium/delete_selected_confirmation.html"

    # 1. The reason on the add and change forms.
    def _may_edit(self, request: HttpRequest, obj: Any) -> bool:
        return self.has_add_permission(request) if obj is None else self.has_change_permission(request, obj)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = list(super().get_fieldsets(request, obj))
        if self._may_edit(request, obj):
            fieldsets.append((_("Reason for this change"), {"fields": [REASON]}))
        return fieldsets

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        # Django passes the fieldsets' fields (ours included); the model form is built without it, then gets it.
        # (fields=None is Django asking for every model field, from get_fields: passed on as it is.)
        if "fields" not in kwargs:
            kwargs["fields"] = flatten_fieldsets(self.get_fieldsets(request, obj))
        if kwargs["fields"] is None:  # get_fields' probe of the model's fields: the reason is not one of them
            return super().get_form(request, obj, change=change, **kwargs)
        kwargs["fields"] = [f for f in kwargs["fields"] if f != REASON]
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {REASON: ReasonField(required=self._may_edit(request, obj))})

    # 2. The ledger, where Django's admin logs each change (inside the view's transaction).
    def construct_change_message(self, request: HttpRequest, form: Any, formsets: Any, add: bool = False) -> Any:
        changes: dict[str, Any] = {"changed": form_changes(form)}
        inlines = formset_changes(formsets)
        if inlines:
            changes["inlines"] = inlines
        request._atrium_admin_changes = changes  # type: ignore[attr-defined]
        return super().construct_change_message(request, form, formsets, add)

    def _changes(self, request: HttpRequest) -> dict[str, Any]:
        return dict(getattr(request, "_atrium_admin_changes", None) or {"changed": {}})

    def log_addition(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        entry = super().log_addition(request, obj, message)
        audit_write(request, op="admin.add", model=self.model, obj=obj, detail=self._changes(request))
        return entry

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        entry = super().log_change(request, obj, message)
        audit_write(request, op="admin.change", model=self.model, obj=obj, detail=self._changes(request))
        return entry

    def log_deletions(self, request: HttpRequest, queryset: Any) -> Any:
        entries = super().log_deletions(request, queryset)
        for obj in queryset:
            audit_write(request, op="admin.delete", model=self.model, obj=obj, detail={"before": snapshot(obj)})
        return entries

    # 3. The delete page asks for the reason; without one it is shown again with the error.
    def delete_view(self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None) -> Any:
        if request.method == "POST" and not admin_reason(request):
            request.POST = QueryDict()  # "not confirmed": the page is rendered again
            extra_context = {**(extra_context or {}), "reason_error": REASON_REQUIRED}
        return super().delete_view(request, object_id, extra_context)

    # 4. Every other changelist action: a reason, one transaction, one op row.
    def get_actions(
        self, request: HttpRequest, action_location: ActionLocation = ActionLocation.CHANGE_LIST
    ) -> dict[str, Any]:
        actions = super().get_actions(request, action_location=action_location)
        return {
            name: dataclasses.replace(a, func=audited_action(a.func, name))
            for name, a in actions.items()
            if a is not None
        }


def audited_action(func: Callable[..., Any], name: str) -> Callable[..., Any]:
    if getattr(func, "atrium_audited", False):
        return func
    deleting = name == "delete_selected"  # its rows are written by log_deletions, one per deleted object

    def action(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: Any) -> HttpResponse | None:
        if deleting and not request.POST.get("post"):
            return func(modeladmin, request, queryset)  # the confirmation page, which asks for the reason
        if not admin_reason(request):
            modeladmin.message_user(request, str(REASON_REQUIRED), messages.ERROR)
            return None
        with transaction.atomic():
            ids = list(queryset.values_list("pk", flat=True)[: MAX_IDS + 1])
            palace_ids = set(queryset.values_list("palace_id", flat=True)) if _has_palace(queryset.model) else set()
            response = func(modeladmin, request, queryset)
            if not deleting:
                palace = Palace.objects.filter(pk=next(iter(palace_ids))).first() if len(palace_ids) == 1 else None
                detail = {
                    "action": name,
                    "ids": [_plain(i) for i in ids[:MAX_IDS]],
                    "count": len(ids),
                    "_palace": palace,
                }
                if len(ids) > MAX_IDS:
                    detail["count"] = queryset.count()
                audit_write(request, op="admin.action", model=queryset.model, detail=detail)
        return response

    action.__name__ = name
    action.atrium_audited = True  # type: ignore[attr-defined]
    for attribute in ("allowed_permissions", "short_description"):
        if hasattr(func, attribute):
            setattr(action, attribute, getattr(func, attribute))
    return action


def _has_palace(model: type[models.Model]) -> bool:
    return any(f.attname == "palace_id" for f in model._meta.concrete_fields)


def audited(admin_class: type[admin.ModelAdmin]) -> type[admin.ModelAdmin]:
    """`admin_class` with the audit mixed in first (a no-op for a class that already has it)."""
    if issubclass(admin_class, AuditedModelAdmin):
        return admin_class
    return type(admin_class.__name__, (AuditedModelAdmin, admin_class), {"__module__": admin_class.__module__})


class AuditedAdminSite(admin.AdminSite):
    """Django's admin site, registering every model with the audit (see the module docstring)."""

    def register(self, model_or_iterable: Any, admin_class: Any = None, **options: Any) -> None:
        super().register(model_or_iterable, audited(admin_class or admin.ModelAdmin), **options)


@checks.register(checks.Tags.admin)
def check_admin_audited(app_configs: Sequence[Any] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """palace.E020: a ModelAdmin that escaped the audit (put into the registry some other way)."""
    errors: list[checks.CheckMessage] = []
    for model, model_admin in admin.site._registry.items():
        if not isinstance(model_admin, AuditedModelAdmin):
            errors.append(
                checks.Error(
                    f"the admin for {model._meta.label} does not write the op log",
                    hint="register it with admin.site.register / @admin.register (palace.admin_audit.AuditedAdminSite)",
                    obj=type(model_admin),
                    id="palace.E020",
                )
            )
    return errors
