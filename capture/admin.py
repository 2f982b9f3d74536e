"""Capture in the audited admin: sessions, turns and backfill runs, read-only (they change through capture's
services and the worker, which write the op rows). A turn's text and a session's summary are bodies: shown only to
staff with `memory.view_memory_body`, like a memory's content (memory/admin/memories.py)."""

from __future__ import annotations

from django.contrib import admin

from capture.models import BackfillRun, CaptureSession, CaptureTurn
from palace.admin import BodyMaskedAdmin


class _ReadOnly(BodyMaskedAdmin):
    body_hidden_note = "(hidden: seeing captured text needs the “Can see memory bodies in the admin” permission)"


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
