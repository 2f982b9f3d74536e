from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from palace.models import Membership, OpLog, Palace


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Palace)
class PalaceAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "name", "origin_key", "personal_owner", "created_at"]
    list_filter = ["kind"]
    search_fields = ["name", "origin_key", "personal_owner__username"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["palace", "user", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["palace__name", "user__username"]


@admin.register(OpLog)
class OpLogAdmin(admin.ModelAdmin):
    """Read-only: the ledger is append-only (a database trigger refuses changes)."""

    list_display = [
        "created_at",
        "op",
        "actor_kind",
        "actor_name",
        "actor_token_label",
        "palace",
        "target_kind",
        "target_id",
        "reason",
    ]
    list_filter = ["op", "actor_kind"]
    search_fields = ["op", "actor_name", "reason", "request_id"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


from palace import admin_console  # noqa: E402, F401  (replaces the OpLog admin with the audit console)
