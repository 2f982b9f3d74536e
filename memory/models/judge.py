"""The judge's records and settings (memory.judge.rulings): one row per adjudication, and the one row of judge settings.

Imported at the end of memory/models/memory.py so Django registers them with the memory app.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from palace.models import Palace

MIN_TIMEOUT_MS = 1000
MAX_TIMEOUT_MS = 60000
DEFAULT_TIMEOUT_MS = 3000


class Adjudication(models.Model):
    """One ruling on a pair (a new text and its near neighbour): what was decided, by whom, and why.

    `new_memory` is null when the ruling was MERGE (no row was created; `new_text` keeps what was said). The memory
    references are SET_NULL so pruning memories never fails on the record; the texts are kept short.
    """

    class Verdict(models.TextChoices):
        MERGE = "merge"
        ACCEPT = "accept"
        DEFER = "defer"

    palace = models.ForeignKey(Palace, on_delete=models.CASCADE, related_name="adjudications")
    created_at = models.DateTimeField(auto_now_add=True)
    verdict = models.CharField(max_length=8, choices=Verdict.choices)
    contradiction = models.BooleanField(default=False)  # a `contradicts` edge was created for this pair
    p_same = models.FloatField(null=True, blank=True)  # the model's probability; null on the rules path
    p_contradiction = models.FloatField(null=True, blank=True)
    similarity = models.FloatField(default=0.0)
    model_took_part = models.BooleanField(default=False)
    model_name = models.CharField(max_length=200, blank=True)
    elapsed_ms = models.PositiveIntegerField(default=0)
    fallback_reason = models.CharField(max_length=300, blank=True)  # why the rules decided ("" when the model did)
    reason = models.CharField(max_length=300, blank=True)  # the one-line reason (the model's, or the rule's)
    new_memory = models.ForeignKey("memory.Memory", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    neighbour = models.ForeignKey("memory.Memory", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    new_text = models.CharField(max_length=300, blank=True)
    edge = models.ForeignKey("memory.Edge", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        indexes = [models.Index(fields=["palace", "-id"], name="adjudication_palace_recent")]

    def __str__(self) -> str:
        return f"{self.verdict} #{self.new_memory_id} vs #{self.neighbour_id}"


class JudgeSettings(models.Model):
    """The judge's model endpoint, edited by an admin (one row, pk=1). The API key is stored encrypted
    (memory.judge.config) and never read back out to a page or an API."""

    enabled = models.BooleanField(default=False)
    base_url = models.CharField(max_length=500, blank=True)
    model = models.CharField(max_length=200, blank=True)
    timeout_ms = models.PositiveIntegerField(default=DEFAULT_TIMEOUT_MS)
    api_key_encrypted = models.TextField(blank=True)
    api_key_last4 = models.CharField(max_length=4, blank=True)
    api_key_length = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        verbose_name_plural = "judge settings"
        constraints = [
            models.CheckConstraint(
                name="judge_timeout_range",
                condition=models.Q(timeout_ms__gte=MIN_TIMEOUT_MS) & models.Q(timeout_ms__lte=MAX_TIMEOUT_MS),
            ),
        ]

    def __str__(self) -> str:
        return "judge settings"
