from __future__ import annotations

from django.contrib import admin

from review.models import ReviewCard


@admin.register(ReviewCard)
class ReviewCardAdmin(admin.ModelAdmin):
    """Cards are changed by grading (review/services.py); the admin shows them and lets an admin pause one."""

    list_display = ["memory", "palace", "due_at", "repetitions", "interval_days", "ease", "last_grade", "active"]
    list_filter = ["active", "palace"]
    search_fields = ["memory__placard", "memory__id"]
    raw_id_fields = ["memory", "palace"]
    readonly_fields = ["repetitions", "interval_days", "ease", "last_reviewed_at", "last_grade", "created_at"]
    date_hierarchy = "due_at"
