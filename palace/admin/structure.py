from __future__ import annotations

from django.contrib import admin

from palace.admin.readonly import ReadOnlyAdmin
from palace.models import Membership, OpLog, Palace, Room, Slot, TourStop


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]
    # Shown, not edited: a member the operator adds here is accepted at once (the operator's act, like the CLI);
    # only the invited person turns a pending invitation into a membership.
    readonly_fields = ["state"]


@admin.register(Palace)
class PalaceAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "name", "origin_key", "personal_owner", "created_at"]
    list_filter = ["kind"]
    search_fields = ["name", "origin_key", "personal_owner__username"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["palace", "user", "role", "state", "created_at"]
    list_filter = ["role", "state"]
    search_fields = ["palace__name", "user__username"]


@admin.register(OpLog)
class OpLogAdmin(ReadOnlyAdmin):
    """Read-only: the ledger is append-only (a database trigger refuses changes)."""

    list_display = [
        "created_at",
        "op",
        "actor_kind",
        "actor_name",
        "actor_token_label",
        "palace",
        "target_kind",
        "target_id",
        "reason",
    ]
    list_filter = ["op", "actor_kind"]
    search_fields = ["op", "actor_name", "reason", "request_id"]
    date_hierarchy = "created_at"


class StructureAdmin(ReadOnlyAdmin):
    """Rooms, slots and the tour route are laid out by the slotting code (palace/slots.py) and never recycled, so
    the admin shows them and changes none of them (nothing to account for)."""

    list_filter = ["palace"]


@admin.register(Room)
class RoomAdmin(StructureAdmin):
    list_display = ["name", "palace", "kind", "ordinal", "capacity", "created_at"]


@admin.register(Slot)
class SlotAdmin(StructureAdmin):
    list_display = ["coordinate", "palace", "room", "number", "created_at"]
    list_select_related = ["room"]


@admin.register(TourStop)
class TourStopAdmin(StructureAdmin):
    list_display = ["palace", "seq", "slot", "created_at"]
    list_select_related = ["slot__room"]
