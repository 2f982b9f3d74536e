"""Audit-and-restore admin for memories and edges.

Rows are read-only here: content changes go through the write pipeline (redaction, op log), never a raw form. The
two actions, forget and restore, call the services, so each writes its op row; the admin acts as a system actor
carrying the admin's user, because an administrator is not necessarily a member of the palace.

Who may do what (each a model permission, granted per user or group in the admin; a superuser has them all):
- `memory.view_memory`: the metadata (palace, kind, status, scores, provenance, times) — not the body.
- `memory.view_memory_body`: the body as well (content, placard, the derived search text, the epitaph, meta).
  Without it the admin shows a note in the body's place and does not search by content, so a staff member who
  audits the ledger does not read what every team's agents learned.
- `memory.forget_memory` / `memory.restore_memory`: the two actions. Without them the action is not offered and a
  forged POST is refused (Django checks an action's `permissions` before running it). Each needs a reason, which
  both the memory's own op row and the admin's (palace/admin_site.py) carry.
- `memory.export_memory`: taking memories out of the server (the export); without it a staff member sees the
  audit trail but cannot carry contents away.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from memory.lifecycle import memory_forget, memory_restore
from memory.models import DistillJob, DistillProposal, Edge, Memory
from palace.admin import BODY_HIDDEN, BodyMaskedAdmin, can_see_bodies
from palace.admin_site import admin_actor, admin_reason
from palace.errors import AtriumError

# The fields that carry what was remembered, as opposed to facts about the row.
BODY_FIELDS = ("content", "placard", "search_text", "epitaph", "meta")


@admin.action(description="Forget selected memories (soft, restorable)", permissions=["forget"])
def forget_memories(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
    done = 0
    for memory in queryset:
        try:
            memory_forget(memory_id=memory.pk, actor=admin_actor(request), reason=admin_reason(request))
            done += 1
        except AtriumError as exc:
            modeladmin.message_user(request, f"#{memory.pk}: {exc.message}", messages.WARNING)
    modeladmin.message_user(request, f"forgot {done} memories")


@admin.action(description="Restore selected memories (forgotten or archived → active)", permissions=["restore"])
def restore_memories(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
    done = 0
    for memory in queryset:
        try:
            memory_restore(memory_id=memory.pk, actor=admin_actor(request), reason=admin_reason(request))
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

    @admin.display(description="content")
    def content_hidden(self, obj: Memory) -> str:
        return "(hidden)"

    @admin.display(description="body")
    def body_hidden(self, obj: Memory) -> str:
        return BODY_HIDDEN

    def get_list_display(self, request: HttpRequest) -> Any:
        shown = super().get_list_display(request)
        return shown if can_see_bodies(request) else [c if c != "short_content" else "content_hidden" for c in shown]

    def get_search_fields(self, request: HttpRequest) -> tuple[str, ...]:
        # Searching by content is reading it one guess at a time.
        fields = tuple(super().get_search_fields(request))
        return fields if can_see_bodies(request) else tuple(f for f in fields if f not in BODY_FIELDS)

    def get_exclude(self, request: HttpRequest, obj: Memory | None = None) -> tuple[str, ...]:
        hidden = () if can_see_bodies(request) else BODY_FIELDS
        return (*(self.exclude or ()), *hidden)

    def get_fields(self, request: HttpRequest, obj: Memory | None = None) -> Any:
        excluded = self.get_exclude(request, obj)
        fields = [f.name for f in Memory._meta.fields if f.name not in excluded]
        return fields if can_see_bodies(request) else ["body_hidden", *fields]

    def get_readonly_fields(self, request: HttpRequest, obj: Memory | None = None) -> Any:
        return self.get_fields(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Memory | None = None) -> bool:
        return False

    def has_forget_permission(self, request: HttpRequest) -> bool:
        user: Any = request.user
        return bool(user.has_perm("memory.forget_memory"))

    def has_restore_permission(self, request: HttpRequest) -> bool:
        user: Any = request.user
        return bool(user.has_perm("memory.restore_memory"))


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


@admin.register(DistillProposal)
class DistillProposalAdmin(BodyMaskedAdmin):
    """Proposals are applied or rejected where a person reviews them (the panel's Judge view, `memory_distill`);
    here they are shown, the proposed rule's text only with `memory.view_memory_body`."""

    body_fields = BODY_FIELDS
    list_display = ("id", "palace", "kind", "status", "producer", "member_ids", "created_at", "decided_at")
    list_filter = ("status", "kind", "producer")
    ordering = ("-id",)


@admin.register(DistillJob)
class DistillJobAdmin(BodyMaskedAdmin):
    """A `memory_distill` run done by the worker, shown read-only; its result holds the clusters' texts, so it is
    shown only with `memory.view_memory_body` (the starter reads it through the tool or REST)."""

    body_fields = ("result",)
    list_display = ("id", "palace", "user", "mode", "state", "created_at", "finished_at")
    list_filter = ("state", "mode")
    ordering = ("-id",)

    @admin.display(description="result")
    def body_hidden(self, obj: DistillJob) -> str:
        return self.body_hidden_note
