"""Admin pages that show rows and change none (the op log, the palace's structure, a memory's derived rows, capture's
sessions and turns), and among them those whose rows carry bodies: what people and their agents wrote, shown only to
staff with `memory.view_memory_body` (so an auditor of the ledger does not read every team's memories). Here, the
lowest layer whose admin needs it, so each app's admin takes the one mixin instead of writing it again."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

BODY_HIDDEN = "(hidden: seeing memory bodies needs the “Can see memory bodies in the admin” permission)"


def can_see_bodies(request: HttpRequest) -> bool:
    user: Any = request.user
    return bool(user.is_active and user.has_perm("memory.view_memory_body"))


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows are shown, never added, changed or deleted here: they change through services that write op rows."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class BodyMaskedAdmin(ReadOnlyAdmin):
    """Read-only, with `body_fields` shown (in the form, the list and the search) only to holders of
    `memory.view_memory_body`; without it a `body_hidden` line says why they are missing. Foreign keys named in
    `refs` are shown by a method of that name (an id and a link) rather than by the related row's text."""

    body_fields: tuple[str, ...] = ()
    body_hidden_note = BODY_HIDDEN
    refs: dict[str, str] = {}

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        names = [self.refs.get(f.name, f.name) for f in self.model._meta.fields]
        if can_see_bodies(request) or not self.body_fields:
            return names
        return ["body_hidden", *(n for n in names if n not in self.body_fields)]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.get_fields(request, obj)

    def get_list_display(self, request: HttpRequest) -> Any:
        shown = super().get_list_display(request)
        return shown if can_see_bodies(request) else [c for c in shown if c not in self.body_fields]

    def get_search_fields(self, request: HttpRequest) -> Any:
        # Searching by a body is reading it one guess at a time.
        fields = tuple(super().get_search_fields(request))
        return fields if can_see_bodies(request) else tuple(f for f in fields if f not in self.body_fields)

    @admin.display(description="body")
    def body_hidden(self, obj: Any) -> str:
        return self.body_hidden_note
