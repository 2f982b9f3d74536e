"""Requests for new projects (ATRIUM_PROJECT_APPROVAL): listed read-only, approved or declined by an action.

An action needs `palace.approve_projectrequest` (superusers have it): staff status alone decides nothing. Each
action is audited like every other (a reason, one `admin.action` row, palace/admin_site.py), and each decision writes
its own op row through the service (`project.approve` with the new palace, `project.decline`).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from palace.admin.readonly import ReadOnlyAdmin
from palace.admin_site import admin_actor, admin_reason
from palace.approval import project_request_approve, project_request_decline
from palace.errors import AtriumError
from palace.models import ProjectRequest

APPROVE_PERMISSION = "palace.approve_projectrequest"


@admin.action(description="Approve: create the project with the requester as its owner", permissions=["approve"])
def approve_requests(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[ProjectRequest]) -> None:
    done = 0
    for row in queryset.order_by("created_at", "pk"):
        try:
            palace = project_request_approve(
                request_id=row.pk, actor=admin_actor(request), reason=admin_reason(request)
            )
        except AtriumError as exc:
            modeladmin.message_user(request, f"#{row.pk}: {exc.message}", messages.WARNING)
            continue
        done += 1
        modeladmin.message_user(request, f"created {palace.origin_key}, owned by {row.requester.get_username()}")
    modeladmin.message_user(request, f"approved {done} request(s)")


@admin.action(description="Decline: no project", permissions=["approve"])
def decline_requests(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[ProjectRequest]) -> None:
    done = 0
    actor, reason = admin_actor(request), admin_reason(request)
    for row in queryset:
        try:
            project_request_decline(request_id=row.pk, actor=actor, reason=reason)
            done += 1
        except AtriumError as exc:
            modeladmin.message_user(request, f"#{row.pk}: {exc.message}", messages.WARNING)
    modeladmin.message_user(request, f"declined {done} request(s)")


# A request is decided by the actions only (which create the palace and write the op rows), never edited.
@admin.register(ProjectRequest)
class ProjectRequestAdmin(ReadOnlyAdmin):
    list_display = ["id", "origin_key", "name", "requester", "state", "created_at", "decided_by", "decided_at"]
    list_filter = ["state"]
    search_fields = ["origin_key", "requester__username"]
    list_select_related = ["requester"]
    actions = [approve_requests, decline_requests]
    ordering = ["-created_at"]

    def has_approve_permission(self, request: HttpRequest) -> bool:
        user: Any = request.user
        return bool(user.has_perm(APPROVE_PERMISSION))
