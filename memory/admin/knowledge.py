"""The rest of the memory app in the admin, so the audit covers every model: the knowledge layer (entities, their
links to memories, facts), the curated profile's and the handoffs' versions, and what searches leave behind
(retrieval records, evidence batches).

All read-only here: each row is written by its service (memory.knowledge, memory.context, memory.search), which
keeps what the rows hold together (an entity's normalised keys, a version's number, a fact's two time axes) and
writes the op row; a raw form would do neither. Their changes are reverted from the audit console instead
(memory/admin/audit.py: a merge, a rename, a profile or handoff version).

What was remembered — an entity's names and aliases, a fact, a profile, a handoff, a search's query — shows only
with `memory.view_memory_body`, as a memory's body does (memory/admin/memories.py); without it the page says so in
its place, the list leaves the column out and search does not look in it. An entity is named by id wherever
another row points to it (`entity #12`), and its own page's title and breadcrumbs say `entity #12` too, because
`str(entity)` carries its name.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from memory.models import AccessRecord, Entity, Fact, HandoffVersion, MemoryEntity, ProfileVersion, SearchBatch
from palace.admin import BodyMaskedAdmin, can_see_bodies


def entity_link(entity_id: int | None) -> str:
    if entity_id is None:
        return "—"
    url = reverse("admin:memory_entity_change", args=[entity_id])
    return format_html('<a href="{}">entity #{}</a>', url, entity_id)


@admin.register(Entity)
class EntityAdmin(BodyMaskedAdmin):
    body_fields = ("name", "key", "aliases", "alias_keys")
    refs = {"merged_into": "merged_into_ref"}
    list_display = ("id", "palace", "kind", "name", "aliases", "last_mentioned_at", "merged_into_ref")
    list_filter = ("kind",)
    list_select_related = ("palace",)
    search_fields = ("name", "key")
    ordering = ("-id",)

    @admin.display(description="merged into")
    def merged_into_ref(self, obj: Entity) -> str:
        return entity_link(obj.merged_into_id)

    def _shown(self, request: HttpRequest, obj: Entity) -> str:
        return str(obj) if can_see_bodies(request) else f"entity #{obj.pk} ({obj.kind})"

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        obj = self.get_object(request, unquote(object_id))
        if obj is not None:
            shown = Shown(obj, self._shown(request, obj))
            extra_context = {**(extra_context or {}), "subtitle": str(shown), "original": shown}
        return super().change_view(request, object_id, form_url, extra_context)

    def history_view(self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None) -> Any:
        obj = self.get_object(request, unquote(object_id))
        if obj is not None:
            shown = Shown(obj, self._shown(request, obj))
            extra_context = {**(extra_context or {}), "title": f"Change history: {shown}", "object": shown}
        return super().history_view(request, object_id, extra_context)


class Shown:
    """A row as the admin's templates see it, printed as `text` (its title and breadcrumbs) and otherwise itself."""

    def __init__(self, obj: Any, text: str) -> None:
        self._obj, self._text = obj, text

    def __str__(self) -> str:
        return self._text

    def __getattr__(self, name: str) -> Any:
        return getattr(self._obj, name)


@admin.register(MemoryEntity)
class MemoryEntityAdmin(BodyMaskedAdmin):
    refs = {"entity": "entity_ref"}
    list_display = ("id", "palace", "memory", "entity_ref", "source", "created_at")
    list_filter = ("source",)
    list_select_related = ("palace", "memory")
    ordering = ("-id",)
    show_full_result_count = False

    @admin.display(description="entity")
    def entity_ref(self, obj: MemoryEntity) -> str:
        return entity_link(obj.entity_id)


@admin.register(Fact)
class FactAdmin(BodyMaskedAdmin):
    body_fields = ("content",)
    refs = {"entity": "entity_ref"}
    list_display = ("id", "palace", "entity_ref", "predicate", "content", "valid_from", "valid_to", "superseded_at")
    list_select_related = ("palace",)
    search_fields = ("content", "predicate")
    ordering = ("-id",)

    @admin.display(description="entity")
    def entity_ref(self, obj: Fact) -> str:
        return entity_link(obj.entity_id)


@admin.register(ProfileVersion)
class ProfileVersionAdmin(BodyMaskedAdmin):
    body_fields = ("content",)
    list_display = ("id", "palace", "version", "chars", "rolled_back_from", "created_by", "created_at")
    list_select_related = ("palace", "created_by")
    ordering = ("-id",)

    @admin.display(description="characters")
    def chars(self, obj: ProfileVersion) -> int:
        return len(obj.content)


@admin.register(HandoffVersion)
class HandoffVersionAdmin(BodyMaskedAdmin):
    body_fields = ("doing", "next_steps", "open_questions", "files")
    list_display = ("id", "palace", "user", "version", "restored_from", "created_at")
    list_select_related = ("palace", "user")
    ordering = ("-id",)


@admin.register(AccessRecord)
class AccessRecordAdmin(BodyMaskedAdmin):
    """A retrieval (not a mutation, so not on the op log): which memory went to whom, at which rank."""

    list_display = ("id", "memory", "user", "token_id", "via", "rank", "batch", "created_at")
    list_filter = ("via",)
    list_select_related = ("memory", "user")
    ordering = ("-id",)
    show_full_result_count = False


@admin.register(SearchBatch)
class SearchBatchAdmin(BodyMaskedAdmin):
    """An evidence batch: the handle a search minted, the memories its refs name; the query is a body."""

    body_fields = ("query",)
    list_display = ("id", "handle", "user", "palace_ids", "assessed", "created_at")
    list_select_related = ("user",)
    ordering = ("-id",)
    show_full_result_count = False
