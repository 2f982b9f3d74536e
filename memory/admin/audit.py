"""The audit console's memory pages (the op log's side is palace/admin/console.py): a memory's whole history, and
restore from it — restore a forgotten or archived memory, check out an earlier version, undo a distillation, revert
one op row, and revert everything one actor did in a time range after a preview.

The views are thin: the history is memory.audit.history.memory_history, every change a memory.restore service (which
checks `memory.restore_memory` again, needs a reason and writes the op rows). Without the permission the buttons are
not drawn and a forged POST gets 403. Without `memory.view_memory_body` the history shows ids, kinds, sizes and ops,
never a body or a placard.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html
from django.views.decorators.http import require_http_methods, require_POST

from memory.admin.memories import MemoryAdmin
from memory.audit import (
    RevertPlan,
    Selection,
    bulk_revert_apply,
    bulk_revert_preview,
    distill_revert_as_staff,
    memory_checkout_as_staff,
    memory_history,
    memory_restore_as_staff,
    op_revert,
    op_revert_preview,
    plan_page,
    plan_revert,
    reverted_map,
)
from memory.models import Memory
from palace.admin import AuditConsoleAdmin, can_restore, can_see_bodies, parse_moment
from palace.errors import AtriumError
from palace.errors import PermissionDenied as Forbidden
from palace.models import OpLog
from palace.oplog import actor_label, before_after, before_after_text, op_class


class ReasonForm(forms.Form):
    reason = forms.CharField(max_length=500, strip=True, help_text="Written on the op rows. Required.")


class BulkForm(forms.Form):
    actor = forms.CharField(max_length=200, help_text="A username (every row they wrote) or token:ID.")
    since = forms.CharField(max_length=40, help_text="YYYY-MM-DD or an ISO date-time (inclusive).")
    until = forms.CharField(max_length=40, help_text="YYYY-MM-DD (the whole day) or an ISO date-time (exclusive).")
    reason = forms.CharField(max_length=500, required=False, strip=True, help_text="Required to apply.")

    def selection(self) -> Selection:
        data = self.cleaned_data
        since, until = parse_moment(data["since"], end=False), parse_moment(data["until"], end=True)
        if since is None or until is None:
            raise forms.ValidationError("from and to must be dates (YYYY-MM-DD) or ISO date-times")
        who = data["actor"].strip()
        if who.startswith("token:"):
            token = who.removeprefix("token:").strip()
            if not token.isdigit():
                raise forms.ValidationError("a token is named token:ID, e.g. token:12")
            return Selection(since=since, until=until, token_id=int(token))
        user = get_user_model().objects.filter(username=who).first()
        if user is None:
            raise forms.ValidationError(f"no user named {who!r}")
        return Selection(since=since, until=until, user_id=int(user.pk))


def _ops_view(request: HttpRequest, rows: list[Any], memories: list[Memory]) -> list[dict[str, Any]]:
    restorer, user = can_restore(request), request.user
    reverted = reverted_map([row.pk for row in rows]) if restorer else {}
    known = {m.pk: m for m in memories}
    out = []
    for row in rows:
        username = row.actor_user.get_username() if row.actor_user is not None else ""
        changes = before_after(op=row.op, detail=row.detail, target_id=row.target_id)
        out.append(
            {
                "row": row,
                "class": op_class(row.op),
                "actor": actor_label(
                    actor_kind=row.actor_kind,
                    actor_name=row.actor_name,
                    username=username,
                    token_id=row.actor_token_id,
                    token_label=row.actor_token_label,
                ),
                "changes": before_after_text(changes),
                "plan": plan_revert(row=row, reverted=reverted, memories=known, staff=user) if restorer else None,
            }
        )
    return out


def _after_revert(plan: RevertPlan) -> str:
    """A memory's revert lands on its history; any other on the console, where the revert's row is the newest."""
    if plan.memory_id is not None:
        return reverse("admin:memory_memory_full_history", args=[plan.memory_id])
    return reverse("admin:palace_oplog_changelist")


class MemoryConsoleAdmin(MemoryAdmin):
    """The memory admin with the history and restore pages (its list and change page as before, plus a link)."""

    @admin.display(description="history")
    def history_link(self, obj: Memory) -> str:
        return format_html('<a href="{}">history</a>', reverse("admin:memory_memory_full_history", args=[obj.pk]))

    def get_list_display(self, request: HttpRequest) -> Any:
        return [*super().get_list_display(request), "history_link"]

    def get_fields(self, request: HttpRequest, obj: Memory | None = None) -> Any:
        fields = list(super().get_fields(request, obj))
        return [*fields, "history_link"] if obj is not None else fields

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("<int:memory_id>/full-history/", wrap(self.history_page), name="memory_memory_full_history"),
            path("<int:memory_id>/restore-memory/", wrap(self.restore_view), name="memory_memory_restore_one"),
            path("<int:memory_id>/checkout/", wrap(self.checkout_view), name="memory_memory_checkout"),
            path("<int:memory_id>/distill-undo/", wrap(self.distill_undo_view), name="memory_memory_distill_undo"),
            path("revert/<int:op_id>/", wrap(self.revert_view), name="memory_memory_revert"),
            path("bulk-revert/", wrap(self.bulk_view), name="memory_memory_bulk_revert"),
            *super().get_urls(),
        ]

    def _context(self, request: HttpRequest, **extra: Any) -> dict[str, Any]:
        return {**self.admin_site.each_context(request), "opts": self.opts, **extra}

    def history_page(self, request: HttpRequest, memory_id: int) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            history = memory_history(memory_id=memory_id)
        except AtriumError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(reverse("admin:memory_memory_changelist"))
        context = self._context(
            request,
            title=f"History of memory #{memory_id}",
            history=history,
            ops=_ops_view(request, history.ops, history.versions),
            bodies=can_see_bodies(request),
            restorer=can_restore(request),
            form=ReasonForm(),
        )
        return TemplateResponse(request, "admin/memory/memory/full_history.html", context)

    def _restore_post(self, request: HttpRequest, memory_id: int, act: Any) -> HttpResponse:
        """Shared by the three buttons: check, validate the reason, call the service, report, back to history."""
        if not can_restore(request):
            raise PermissionDenied
        form = ReasonForm(request.POST)
        target = memory_id
        if not form.is_valid():
            messages.error(request, "say why: a reason is required")
        else:
            try:
                target, message = act(form.cleaned_data["reason"])
                messages.success(request, message)
            except AtriumError as exc:
                messages.error(request, exc.message)
        return HttpResponseRedirect(reverse("admin:memory_memory_full_history", args=[target]))

    @method_decorator(require_POST)
    def restore_view(self, request: HttpRequest, memory_id: int) -> HttpResponse:
        def act(reason: str) -> tuple[int, str]:
            row = memory_restore_as_staff(memory_id=memory_id, staff=request.user, reason=reason)
            return row.pk, f"memory #{row.pk} restored (active)"

        return self._restore_post(request, memory_id, act)

    @method_decorator(require_POST)
    def checkout_view(self, request: HttpRequest, memory_id: int) -> HttpResponse:
        def act(reason: str) -> tuple[int, str]:
            new = memory_checkout_as_staff(memory_id=memory_id, staff=request.user, reason=reason)
            return new.pk, f"version #{memory_id} checked out as the new current version #{new.pk}"

        return self._restore_post(request, memory_id, act)

    @method_decorator(require_POST)
    def distill_undo_view(self, request: HttpRequest, memory_id: int) -> HttpResponse:
        def act(reason: str) -> tuple[int, str]:
            undone = distill_revert_as_staff(rule_id=memory_id, staff=request.user, reason=reason)
            return memory_id, f"distillation undone: {undone.restored} active again, rule #{memory_id} archived"

        return self._restore_post(request, memory_id, act)

    @method_decorator(require_http_methods(["GET", "POST"]))
    def revert_view(self, request: HttpRequest, op_id: int) -> HttpResponse:
        """GET: what reverting the op row would do (or why not); POST: do it, with a reason. A kind of change whose
        permission the staff member lacks (a member's role needs `palace.change_membership`) is refused with 403."""
        if not can_restore(request):
            raise PermissionDenied
        form = ReasonForm(request.POST or None)
        try:
            plan = op_revert_preview(op_id=op_id, staff=request.user)
            if request.method == "POST" and form.is_valid():
                plan = op_revert(op_id=op_id, staff=request.user, reason=form.cleaned_data["reason"])
                messages.success(request, f"op #{op_id} reverted: {plan.describe}")
                return HttpResponseRedirect(_after_revert(plan))
        except Forbidden as exc:
            raise PermissionDenied(exc.message) from None
        except AtriumError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(reverse("admin:palace_oplog_changelist"))
        context = self._context(request, title=f"Revert op #{op_id}", plan=plan, form=form)
        return TemplateResponse(request, "admin/memory/memory/revert_confirm.html", context)

    @method_decorator(require_http_methods(["GET", "POST"]))
    def bulk_view(self, request: HttpRequest) -> HttpResponse:
        """GET with the form filled: the preview; POST ("apply", with a reason): revert, then report."""
        if not can_restore(request):
            raise PermissionDenied
        data = request.POST if request.method == "POST" else (request.GET or None)
        form = BulkForm(data)
        preview = result = None
        if form.is_valid():
            try:
                selection = form.selection()
                if request.method == "POST":
                    result = bulk_revert_apply(
                        selection=selection, staff=request.user, reason=form.cleaned_data["reason"]
                    )
                else:
                    preview = bulk_revert_preview(selection=selection, staff=request.user)
            except forms.ValidationError as exc:
                form.add_error(None, exc)
            except AtriumError as exc:
                form.add_error(None, exc.message)
        context = self._context(request, title="Bulk restore", form=form, preview=preview, result=result)
        return TemplateResponse(request, "admin/memory/memory/bulk_revert.html", context)


class RevertConsoleAdmin(AuditConsoleAdmin):
    """The op log's console with each row's revert: a "revert…" link where reverting means something, otherwise the
    reason it cannot be (computed for the page's rows at once; shown only to holders of `memory.restore_memory`)."""

    # Each row's plan names its palace, a personal one by its owner: read with the page, not once per row.
    list_select_related = [*AuditConsoleAdmin.list_select_related, "palace__personal_owner"]

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        changelist = super().get_changelist_instance(request)
        if can_restore(request):
            rows = list(changelist.result_list)  # the page's rows, evaluated once: the list renders the same objects
            plans = plan_page(rows=rows, staff=request.user)
            for row in rows:
                row.revert_plan = plans[row.pk]
        return changelist

    @admin.display(description="revert")
    def revert_link(self, row: OpLog) -> str:
        plan: RevertPlan | None = getattr(row, "revert_plan", None)
        if plan is None:
            return ""
        if plan.doable:  # the palace named: staff repair across palaces, and a row must change its own only
            url = reverse("admin:memory_memory_revert", args=[row.pk])
            title = f"{plan.describe} (in {plan.palace})"
            return format_html('<a class="revert-link" href="{}" title="{}">revert…</a>', url, title)
        # Cut to a few lines in the console's table (static/css/console.css), the whole reason on hover.
        said = f"not revertible: {plan.refused} (in {plan.palace})"
        return format_html('<span class="revert-refused help clamp" title="{}">{}</span>', said, said)


admin.site.unregister(Memory)
admin.site.register(Memory, MemoryConsoleAdmin)
admin.site.unregister(OpLog)
admin.site.register(OpLog, RevertConsoleAdmin)
