"""Audit-and-restore admin for memories and edges.

Rows are read-only here: content changes go through the write pipeline (redaction, op log), never a raw form. The
two actions, forget and restore, call the services, so each writes its op row; the admin acts as a system actor
carrying the admin's user, because an administrator is not necessarily a member of the palace.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from memory.models import Edge, Memory
from memory.services import memory_forget, memory_restore
from palace.actors import Actor
from palace.errors import AtriumError


def _admin_actor(request: HttpRequest) -> Actor:
    user: Any = request.user
    return Actor(user=user, system="admin")


@admin.action(description="Forget selected memories (soft, restorable)")
def forget_memories(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
    done = 0
    for memory in queryset:
        try:
            memory_forget(memory_id=memory.pk, actor=_admin_actor(request), reason="forgotten in the admin")
            done += 1
        except AtriumError as exc:
            modeladmin.message_user(request, f"#{memory.pk}: {exc.message}", messages.WARNING)
    modeladmin.message_user(request, f"forgot {done} memories")


@admin.action(description="Restore selected memories (forgotten or archived → active)")
def restore_memories(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
    done = 0
    for memory in queryset:
        try:
            memory_restore(memory_id=memory.pk, actor=_admin_actor(request), reason="restored in the admin")
            done += 1
        except AtriumError as exc:
            modeladmin.message_user(request, f"#{memory.pk}: {exc.message}", messages.WARNING)
    modeladmin.message_user(request, f"restored {done} memories")


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    list_display = ("id", "palace", "kind", "short_content", "status", "confidence", "hit_count", "created_at")
    list_filter = ("status", "kind", "source_kind")
    search_fields = ("content", "placard", "source_session", "source_turn")
    list_select_related = ("palace",)
    ordering = ("-id",)
    actions = (forget_memories, restore_memories)
    exclude = ("embedding", "search_vector")
    show_full_result_count = False  # COUNT(*) over every memory on each page load does not scale

    @admin.display(description="content")
    def short_content(self, obj: Memory) -> str:
        return obj.content[:80]

    def get_readonly_fields(self, request: HttpRequest, obj: Memory | None = None) -> list[str]:
        return [f.name for f in Memory._meta.fields if f.name not in self.exclude]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Memory | None = None) -> bool:
        return False


@admin.register(Edge)
class EdgeAdmin(admin.ModelAdmin):
    list_display = ("id", "palace", "from_memory", "kind", "to_memory", "status", "created_at")
    list_filter = ("kind", "status")
    raw_id_fields = ("from_memory", "to_memory")
    ordering = ("-id",)

    def get_readonly_fields(self, request: HttpRequest, obj: Edge | None = None) -> list[str]:
        return [f.name for f in Edge._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Edge | None = None) -> bool:
        return False


from memory import admin_judge  # noqa: E402, F401  (registers the judge admin)
