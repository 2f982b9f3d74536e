"""The audit console: the op log in the Django admin, for staff.

It filters by palace, actor (a person, a token, a system job, staff), class of operation, memory and time range;
shows what each row changed (before → after, from its detail); links a memory's rows to the memory's whole history
(memory/admin/audit.py: versions, edges, ops, retrievals, and the restore buttons); and exports the filtered trail
as CSV or JSON (streamed). The ledger stays read-only here (a trigger refuses changes to it anyway).

Who may do what:
- `palace.view_oplog`: the trail. Op rows carry no memory bodies; what members wrote on them (the reason of a
  member's change, the detail's epitaphs) shows only with `memory.view_memory_body`; staff's admin reasons and the
  system's show to every auditor.
- `memory.export_memory`: the CSV/JSON export (superusers have it whatever the database holds).
- `memory.restore_memory`: the "revert…" links and "Bulk restore…" (the pages they lead to check it again, and so do
  the services).
"""

from __future__ import annotations

import json
from datetime import datetime, time, timedelta
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.urls import NoReverseMatch, URLPattern, path, reverse
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.html import format_html

from palace.admin.paging import LedgerPaginator, LedgerQuerySet
from palace.admin.readonly import can_see_bodies
from palace.admin.structure import OpLogAdmin
from palace.admin_site import BODY, BODY_FIELDS
from palace.models import OpLog
from palace.oplog import (
    ACTOR_CLASSES,
    OP_CLASSES,
    actor_class_filter,
    actor_label,
    before_after,
    before_after_text,
    csv_stream,
    export_rows,
    json_stream,
    op_class,
    op_class_filter,
)

EXPORT_PERMISSION = "memory.export_memory"
RESTORE_PERMISSION = "memory.restore_memory"
FORMATS = {"csv": "text/csv; charset=utf-8", "json": "application/json"}


def can_export(request: HttpRequest) -> bool:
    user: Any = request.user
    return bool(user.is_active and user.is_staff and user.has_perm(EXPORT_PERMISSION))


def can_restore(request: HttpRequest) -> bool:
    user: Any = request.user
    return bool(user.is_active and user.is_staff and user.has_perm(RESTORE_PERMISSION))


# --- filters -------------------------------------------------------------------------------------------------------


class OpClassFilter(admin.SimpleListFilter):
    title = "operation class"
    parameter_name = "class"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return OP_CLASSES

    def queryset(self, request: HttpRequest, queryset: QuerySet[OpLog]) -> QuerySet[OpLog]:
        value = self.value()
        return queryset.filter(op_class_filter(value)) if value else queryset


class ActorClassFilter(admin.SimpleListFilter):
    title = "kind of actor"
    parameter_name = "actor_class"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return ACTOR_CLASSES

    def queryset(self, request: HttpRequest, queryset: QuerySet[OpLog]) -> QuerySet[OpLog]:
        value = self.value()
        return queryset.filter(actor_class_filter(value)) if value else queryset


class InputFilter(admin.SimpleListFilter):
    """A filter typed into a box (an id, a name, a date) rather than picked from a list. A value it cannot read
    selects nothing and says why, instead of quietly listing everything."""

    template = "admin/palace/input_filter.html"
    placeholder = ""

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return [("", "")]  # one entry, so the admin draws it

    def choices(self, changelist: Any) -> Any:
        yield {
            "parameter": self.parameter_name,
            "value": self.value() or "",
            "placeholder": self.placeholder,
            "hidden": [(k, v) for k, v in changelist.params.items() if k != self.parameter_name],
            "clear": changelist.get_query_string(remove=[self.parameter_name]),
        }

    def queryset(self, request: HttpRequest, queryset: QuerySet[OpLog]) -> QuerySet[OpLog]:
        value = (self.value() or "").strip()
        if not value:
            return queryset
        q = self.condition(value)
        if q is None:
            messages.warning(request, f"{self.title}: cannot read {value!r} ({self.placeholder})")
            return queryset.none()
        return queryset.filter(q)

    def condition(self, value: str) -> Q | None:
        raise NotImplementedError


class PalaceFilter(InputFilter):
    title = "palace"
    parameter_name = "palace"
    placeholder = "id, origin or owner"

    def condition(self, value: str) -> Q | None:
        if value.isdigit():
            return Q(palace_id=int(value))
        return Q(palace__origin_key__icontains=value) | Q(palace__personal_owner__username=value)


class ActorFilter(InputFilter):
    title = "actor"
    parameter_name = "actor"
    placeholder = "username, token:ID or job:NAME"

    def condition(self, value: str) -> Q | None:
        if value.startswith("token:"):
            token = value.removeprefix("token:").strip()
            return Q(actor_token_id=int(token)) if token.isdigit() else None
        if value.startswith("job:"):
            return Q(actor_kind="system", actor_user__isnull=True, actor_name=value.removeprefix("job:").strip())
        return Q(actor_user__username=value)


class MemoryFilter(InputFilter):
    title = "memory"
    parameter_name = "memory"
    placeholder = "memory id"

    def condition(self, value: str) -> Q | None:
        value = value.removeprefix("#")
        return Q(target_kind="memory", target_id=int(value)) if value.isdigit() else None


def parse_moment(value: str, *, end: bool) -> datetime | None:
    """A date (the whole day: its start, or the next day's start for an end) or an ISO date-time."""
    value = value.strip()
    try:
        day = parse_date(value)  # a bare date first: parse_datetime would read it as its midnight
        moment = parse_datetime(value) if day is None else None
    except ValueError:
        return None
    if day is not None:
        moment = datetime.combine(day + timedelta(days=1) if end else day, time.min)
    if moment is None:
        return None
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment


class SinceFilter(InputFilter):
    title = "from"
    parameter_name = "since"
    placeholder = "YYYY-MM-DD or date-time"

    def condition(self, value: str) -> Q | None:
        moment = parse_moment(value, end=False)
        return None if moment is None else Q(created_at__gte=moment)


class UntilFilter(InputFilter):
    title = "to"
    parameter_name = "until"
    placeholder = "YYYY-MM-DD (inclusive) or date-time"

    def condition(self, value: str) -> Q | None:
        moment = parse_moment(value, end=True)
        return None if moment is None else Q(created_at__lt=moment)


# --- the console ---------------------------------------------------------------------------------------------------


REASON_HIDDEN = "(hidden: reading what people wrote needs the “Can see memory bodies in the admin” permission)"


def mask_bodies(value: Any) -> Any:
    """`value` (an op row's detail) with every body-like key's value masked (palace.admin_site.BODY_FIELDS)."""
    if isinstance(value, dict):
        return {k: (BODY if k in BODY_FIELDS and v not in ("", None) else mask_bodies(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_bodies(v) for v in value]
    return value


def mask_reason(row: OpLog) -> str:
    """An op row's reason as staff without `memory.view_memory_body` see it (on screen and in the export)."""
    # What members wrote about their memories (a forget's reason is its epitaph) is a body; the reasons staff give
    # for admin changes and the system's own are the audit trail itself, and stay readable.
    if not row.reason or row.op.startswith("admin.") or row.actor_kind == OpLog.ActorKind.SYSTEM:
        return row.reason
    return REASON_HIDDEN


def clamped(text: str) -> str:
    """A long cell cut to a few lines (static/css/console.css), the whole text on hover; a short one as it is."""
    if len(text) <= CLAMP_CHARS:
        return text
    return format_html('<span class="clamp" title="{}">{}</span>', text, text)


CLAMP_CHARS = 80


def _url(name: str, *args: Any) -> str:
    try:
        return reverse(name, args=args)
    except NoReverseMatch:  # the memory admin is not installed: no link rather than an error
        return ""


class AuditConsoleAdmin(OpLogAdmin):
    change_list_template = "admin/palace/oplog/console_change_list.html"
    list_display = [
        "created_at",
        "op",
        "op_class_label",
        "actor",
        "palace",
        "target",
        "changes",
        "reason",
        "revert_link",
    ]
    list_filter = [OpClassFilter, ActorClassFilter, ActorFilter, PalaceFilter, MemoryFilter, SinceFilter, UntilFilter]
    list_select_related = ["palace", "actor_user"]
    show_facets = admin.ShowFacets.NEVER
    show_full_result_count = False  # COUNT(*) over the whole ledger on every page does not scale
    paginator = LedgerPaginator  # nor does the unfiltered page's own count (palace/admin/paging.py)
    ordering = ["-created_at", "-id"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[OpLog]:
        # The date drill-down reads its periods through LedgerQuerySet.datetimes (palace/admin/paging.py).
        rows = super().get_queryset(request)
        return LedgerQuerySet(model=rows.model, query=rows.query, using=rows.db)

    @admin.display(description="class")
    def op_class_label(self, row: OpLog) -> str:
        return op_class(row.op)

    @admin.display(description="actor")
    def actor(self, row: OpLog) -> str:
        label = actor_label(
            actor_kind=row.actor_kind,
            actor_name=row.actor_name,
            username=row.actor_user.get_username() if row.actor_user is not None else "",
            token_id=row.actor_token_id,
            token_label=row.actor_token_label,
        )
        # One line, cut with an ellipsis (static/css/console.css), the whole label on hover: a token's label wrapped
        # the column to six lines and the table past the window (issue 26).
        return format_html('<span class="clip" title="{}">{}</span>', label, label)

    @admin.display(description="target")
    def target(self, row: OpLog) -> str:
        label = f"{row.target_kind} #{row.target_id}" if row.target_id is not None else row.target_kind
        link = ""
        if row.target_kind == "memory" and row.target_id is not None:
            link = _url("admin:memory_memory_full_history", row.target_id)
        elif row.target_kind == "edge" and row.target_id is not None:
            link = _url("admin:memory_edge_change", row.target_id)
        return format_html('<a href="{}">{}</a>', link, label) if link else label

    @admin.display(description="before → after")
    def changes(self, row: OpLog) -> str:
        return clamped(before_after_text(before_after(op=row.op, detail=row.detail, target_id=row.target_id)) or "—")

    # The list shows a long reason in three lines and the whole of it on hover; the row's page shows it in full.
    @admin.display(description="reason")
    def reason_cell(self, row: OpLog) -> str:
        return clamped(row.reason)

    @admin.display(description="reason")
    def reason_masked_cell(self, row: OpLog) -> str:
        return clamped(mask_reason(row))

    @admin.display(description="")
    def revert_link(self, row: OpLog) -> str:
        # The memory admin replaces this column with each row's plan (memory/admin/audit.py: RevertConsoleAdmin);
        # without it, only a memory's row links to the revert page.
        if row.target_kind != "memory":
            return ""
        link = _url("admin:memory_memory_revert", row.pk)
        return format_html('<a class="revert-link" href="{}">revert…</a>', link) if link else ""

    def get_fields(self, request: HttpRequest, obj: OpLog | None = None) -> Any:
        # A row's detail may quote what a person wrote about a memory (a forget's epitaph, a tombstone's), and so
        # may its reason (a forget's reason is the epitaph): without `memory.view_memory_body` both are shown
        # masked (the reason only where a member wrote it: reason_masked), like bodies everywhere else.
        names = [f.name for f in OpLog._meta.fields]
        masked = {"detail": "detail_masked", "reason": "reason_masked"}
        return names if can_see_bodies(request) else [masked.get(n, n) for n in names]

    def get_readonly_fields(self, request: HttpRequest, obj: OpLog | None = None) -> Any:
        return self.get_fields(request, obj)

    @admin.display(description="detail")
    def detail_masked(self, row: OpLog) -> str:
        return json.dumps(mask_bodies(row.detail), ensure_ascii=False, sort_keys=True, default=str)

    @admin.display(description="reason")
    def reason_masked(self, row: OpLog) -> str:
        return mask_reason(row)

    def get_list_display(self, request: HttpRequest) -> Any:
        shown = list(super().get_list_display(request))
        reason = "reason_cell" if can_see_bodies(request) else "reason_masked_cell"
        shown = [reason if c == "reason" else c for c in shown]
        return shown if can_restore(request) else [c for c in shown if c != "revert_link"]

    def get_urls(self) -> list[URLPattern]:
        export = path("export/", self.admin_site.admin_view(self.export_view), name="palace_oplog_export")
        return [export, *super().get_urls()]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        extra = {
            "can_export": can_export(request),
            "can_restore": can_restore(request),
            "export_query": request.GET.urlencode(),
            "bulk_url": _url("admin:memory_memory_bulk_revert"),
            # The admin's model list beside the table took a fifth of the width the trail needs at 1440 px.
            "is_nav_sidebar_enabled": False,
            **(extra_context or {}),
        }
        return super().changelist_view(request, extra)

    def export_view(self, request: HttpRequest) -> HttpResponseBase:
        """The filtered trail, every page of it, as CSV or JSON: the same filters as the list (the query string)."""
        if not (self.has_view_permission(request) and can_export(request)):
            raise PermissionDenied
        query = request.GET.copy()
        fmt = query.pop("format", ["csv"])[-1]
        if fmt not in FORMATS:
            return HttpResponseBadRequest("format must be csv or json")
        request.GET = QueryDict(query.urlencode())
        try:
            changelist = self.get_changelist_instance(request)
            queryset = changelist.get_queryset(request)
        except IncorrectLookupParameters:
            return HttpResponseBadRequest("the filters are not valid")
        user: Any = request.user
        bodies = can_see_bodies(request)  # without it the file masks what the screen masks (reason and detail)
        rows = export_rows(
            queryset=queryset,
            reader=f"admin-export:{user.get_username()}",
            mask=None if bodies else mask_bodies,
            reason=None if bodies else mask_reason,
        )
        stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
        if fmt == "csv":
            stream = csv_stream(rows)
        else:
            header = {"exported_at": timezone.now(), "exported_by": user.get_username(), "filters": query.dict()}
            stream = json_stream(rows, header=header)
        response = StreamingHttpResponse(stream, content_type=FORMATS[fmt])
        response["Content-Disposition"] = f'attachment; filename="atrium-oplog-{stamp}.{fmt}"'
        return response


admin.site.unregister(OpLog)
admin.site.register(OpLog, AuditConsoleAdmin)
