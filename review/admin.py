from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from palace.admin import can_see_bodies
from review.models import ReviewCard


@admin.register(ReviewCard)
class ReviewCardAdmin(admin.ModelAdmin):
    """Cards are changed by grading (review/services.py); the admin shows them and lets an admin with the change
    permission pause one. Searching by placard is reading bodies, so it needs `memory.view_memory_body`."""

    list_display = ["memory", "palace", "due_at", "repetitions", "interval_days", "ease", "last_grade", "active"]
    list_filter = ["active", "palace"]
    search_fields = ["memory__placard", "memory__id"]
    raw_id_fields = ["memory", "palace"]
    readonly_fields = ["repetitions", "interval_days", "ease", "last_reviewed_at", "last_grade", "created_at"]
    date_hierarchy = "due_at"

    def get_search_fields(self, request: HttpRequest) -> Any:
        return self.search_fields if can_see_bodies(request) else ["memory__id"]
