from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are listed by label and prefix; the raw value is never stored, so it cannot be shown."""

    list_display = ["label", "user", "prefix", "scope", "created_at", "last_used_at", "expires_at", "revoked_at"]
    list_filter = ["scope"]
    search_fields = ["label", "user__username", "prefix"]
    readonly_fields = ["user", "label", "prefix", "scope", "created_at", "last_used_at", "expires_at", "revoked_at"]
    exclude = ["key_hash"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
