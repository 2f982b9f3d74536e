"""The temporal layer: entities (who and what the memories are about), facts true for a time, the curated profile
with its versions, and the live handoff a session boots from.

Imported at the end of memory/models/memory.py so Django registers them with the memory app. Every table has a `palace`
and sits under the same row-level security as memories (migration 0014).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.utils import timezone

from palace.models import Palace


class Entity(models.Model):
    """A person, project, tool, concept or place named in a palace's memories, with its aliases.

    `key` is the normalised canonical name and `alias_keys` the normalised aliases (memory.knowledge.extraction says how
    a name is normalised); a name resolves to the entity whose key or alias keys hold it. A merged entity keeps its row
    with `merged_into` set, so an old id still leads somewhere; it has no links or facts of its own any more.
    """

    class Kind(models.TextChoices):
        PERSON = "person"
        PROJECT = "project"
        TOOL = "tool"
        CONCEPT = "concept"
        PLACE = "place"
        OTHER = "other"

    palace = models.ForeignKey(Palace, on_delete=models.PROTECT, related_name="entities")
    name = models.CharField(max_length=200)
    # Not restricted to Kind's values: kinds are extensible (a model may name one we did not list).
    kind = models.CharField(max_length=32, default=Kind.OTHER)
    key = models.CharField(max_length=200)
    aliases = models.JSONField(default=list, blank=True)  # as written
    alias_keys = ArrayField(models.CharField(max_length=200), default=list, blank=True)  # normalised
    created_at = models.DateTimeField(default=timezone.now)
    last_mentioned_at = models.DateTimeField(null=True, blank=True)
    merged_into = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    memories = models.ManyToManyField("memory.Memory", through="MemoryEntity", related_name="entities")

    class Meta:
        verbose_name_plural = "entities"
        constraints = [
            models.UniqueConstraint(
                fields=["palace", "key"], name="entity_unique_key", condition=models.Q(merged_into__isnull=True)
            ),
        ]
        indexes = [
            models.Index(fields=["palace", "kind", "-last_mentioned_at"], name="entity_palace_kind"),
            GinIndex(fields=["alias_keys"], name="entity_alias_keys"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class MemoryEntity(models.Model):
    """A memory mentions an entity. `source` says who found the mention: rules, model, or the agent (stated)."""

    class Source(models.TextChoices):
        RULES = "rules"
        MODEL = "model"
        AGENT = "agent"
        MERGE = "merge"  # moved here when two entities were merged

    palace = models.ForeignKey(Palace, on_delete=models.PROTECT, related_name="+")
    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="entity_links")
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="memory_links")
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.RULES)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "memory entities"
        constraints = [models.UniqueConstraint(fields=["memory", "entity"], name="memory_entity_unique")]
        indexes = [models.Index(fields=["entity", "memory"], name="memory_entity_by_entity")]

    def __str__(self) -> str:
        return f"memory {self.memory_id} mentions entity {self.entity_id}"


class Fact(models.Model):
    """A short statement about an entity, on two time axes.

    Valid time (the world): `valid_from` .. `valid_to` (null = unknown start / still true). Record time (Atrium):
    `recorded_at` (when it was learned) .. `superseded_at` (when a later fact replaced it; null = current record).
    A fact that `replaces` another ends that one's validity and record; nothing else of the entity is touched.
    """

    palace = models.ForeignKey(Palace, on_delete=models.PROTECT, related_name="facts")
    entity = models.ForeignKey(Entity, on_delete=models.PROTECT, related_name="facts")
    predicate = models.CharField(max_length=100, blank=True)
    content = models.TextField()
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_to = models.DateTimeField(null=True, blank=True)
    recorded_at = models.DateTimeField(default=timezone.now)
    superseded_at = models.DateTimeField(null=True, blank=True)
    replaces = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="replaced_by")
    source_memory = models.ForeignKey(
        "memory.Memory", null=True, blank=True, on_delete=models.SET_NULL, related_name="facts"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by_token_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["entity", "valid_from"], name="fact_entity_valid"),
            models.Index(fields=["palace", "-recorded_at"], name="fact_palace_recorded"),
        ]
        constraints = [
            models.CheckConstraint(
                name="fact_valid_range",
                condition=models.Q(valid_to__isnull=True)
                | models.Q(valid_from__isnull=True)
                | models.Q(valid_to__gte=models.F("valid_from")),
            ),
        ]

    def __str__(self) -> str:
        return f"fact #{self.pk} of entity {self.entity_id}"


class ProfileVersion(models.Model):
    """One version of a palace's curated profile (a person's, in their personal palace; a project's, in its
    palace). The current profile is the highest version; an edit or a rollback appends, history is never rewritten.
    The unique (palace, version) pair is the optimistic lock: two edits against one expected version cannot both
    land."""

    palace = models.ForeignKey(Palace, on_delete=models.PROTECT, related_name="profile_versions")
    version = models.PositiveIntegerField()
    content = models.TextField(blank=True)
    rolled_back_from = models.PositiveIntegerField(null=True, blank=True)  # a rollback copies this version
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by_token_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["palace", "version"], name="profile_version_unique")]

    def __str__(self) -> str:
        return f"profile of palace {self.palace_id} v{self.version}"


class HandoffVersion(models.Model):
    """One snapshot of a person's live handoff in a palace (Prism's "where we were"): what they were doing, next
    steps, open questions, files touched. The current handoff is the highest version for (palace, user); a save
    names the version it expects and appends the next, so every prior snapshot stays."""

    palace = models.ForeignKey(Palace, on_delete=models.PROTECT, related_name="handoff_versions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    version = models.PositiveIntegerField()
    doing = models.TextField(blank=True)
    next_steps = models.JSONField(default=list, blank=True)
    open_questions = models.JSONField(default=list, blank=True)
    files = models.JSONField(default=list, blank=True)
    restored_from = models.PositiveIntegerField(null=True, blank=True)  # a checkout copies this version
    created_by_token_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["palace", "user", "version"], name="handoff_version_unique"),
        ]

    def __str__(self) -> str:
        return f"handoff of user {self.user_id} in palace {self.palace_id} v{self.version}"
