"""The scheduled jobs' admin (django-celery-beat) with a permission on each action.

django-celery-beat's own actions (enable, disable, toggle, run now) need no permission, so a staff member allowed
only to view the schedule could switch decay off or run distillation at once. Here each needs
`django_celery_beat.change_periodictask`, like editing a task in its form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django_celery_beat import admin as beat_admin
from django_celery_beat.models import PeriodicTask

from ops.models import ExportLinkUse

ACTIONS = ("enable_tasks", "disable_tasks", "toggle_tasks", "run_tasks")


def _needs_change(name: str) -> Callable[..., Any]:
    parent = getattr(beat_admin.PeriodicTaskAdmin, name)

    def action(self: admin.ModelAdmin, request: Any, queryset: Any) -> Any:
        return parent(self, request, queryset)

    action.__name__ = name
    return admin.action(description=parent.short_description, permissions=["change"])(action)


class PeriodicTaskAdmin(beat_admin.PeriodicTaskAdmin):
    enable_tasks = _needs_change("enable_tasks")
    disable_tasks = _needs_change("disable_tasks")
    toggle_tasks = _needs_change("toggle_tasks")
    run_tasks = _needs_change("run_tasks")


admin.site.unregister(PeriodicTask)
admin.site.register(PeriodicTask, PeriodicTaskAdmin)


@admin.register(ExportLinkUse)
class ExportLinkUseAdmin(admin.ModelAdmin):
    """Which export links were spent, by whom and when (a link downloads once). Read-only: the download writes the
    row in the transaction that builds the file, and the links' life prunes them."""

    list_display = ("nonce", "user_id", "used_at")
    ordering = ("-used_at",)

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False
