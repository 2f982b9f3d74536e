"""Spaced review: a card per enrolled memory, scheduled by the pure SM-2 function in review/scheduler.py."""

from __future__ import annotations

from django.db import models

from memory.models import Memory
from palace.models import Palace


class ReviewCard(models.Model):
    memory = models.OneToOneField(Memory, on_delete=models.CASCADE, related_name="review_card")
    palace = models.ForeignKey(Palace, on_delete=models.PROTECT, related_name="review_cards")
    repetitions = models.PositiveIntegerField(default=0)
    interval_days = models.PositiveIntegerField(default=0)
    ease = models.FloatField(default=2.5)
    due_at = models.DateTimeField(db_index=True)
    last_reviewed_at = models.DateTimeField(null=True, blank=True)
    last_grade = models.PositiveSmallIntegerField(null=True, blank=True)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["palace", "active", "due_at"], name="review_palace_due")]

    def __str__(self) -> str:
        return f"card for memory {self.memory_id} due {self.due_at:%Y-%m-%d}"
