"""Capture in the audited admin: sessions, turns and backfill runs, read-only (they change through capture's
services and the worker, which write the op rows). A turn's text and a session's summary are bodies: shown only to
staff with `memory.view_memory_body`, like a memory's content (memory/admin/memories.py)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models
from django.http import HttpRequest

from capture.models import BackfillRun, CaptureSession, CaptureTurn
from memory.admin import can_see_bodies

BODY_HIDDEN = "(hidden: seeing captured text needs the “Can see memory bodies in the admin” permission)"


class _ReadOnly(admin.ModelAdmin):
    body_fields: tuple[str, ...] = ()

    @admin.display(description="body")
    def body_hidden(self, obj: models.Model) -> str:
        return BODY_HIDDEN

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = [f.name for f in self.model._meta.fields]
        if can_see_bodies(request):
            return fields
        return ["body_hidden", *(f for f in fields if f not in self.body_fields)]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.get_fields(request, obj)

    def get_search_fields(self, request: HttpRequest) -> Any:
        # Searching by a body is reading it one guess at a time.
        fields = tuple(super().get_search_fields(request))
        return fields if can_see_bodies(request) else tuple(f for f in fields if f not in self.body_fields)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(CaptureSession)
class CaptureSessionAdmin(_ReadOnly):
    body_fields = ("summary",)
    list_display = ("id", "user", "palace", "client", "mode", "source", "routed_by", "last_turn_at", "created_at")
    list_filter = ("source", "mode", "client", "routed_by")
    search_fields = ("key", "origin", "summary")
    list_select_related = ("user", "palace")
    ordering = ("-id",)


@admin.register(CaptureTurn)
class CaptureTurnAdmin(_ReadOnly):
    body_fields = ("text",)
    list_display = ("id", "session", "index", "role", "tool", "state", "method", "attempts", "at")
    list_filter = ("state", "role", "method")
    search_fields = ("session__key", "tool", "text")
    raw_id_fields = ("session",)
    ordering = ("-id",)
    show_full_result_count = False


@admin.register(BackfillRun)
class BackfillRunAdmin(_ReadOnly):
    list_display = ("id", "user", "state", "pause_requested", "started_at", "finished_at", "created_at")
    list_filter = ("state",)
    list_select_related = ("user",)
    ordering = ("-id",)
