"""Template filters for the panel: translated display names for stored values, coordinates, chart geometry."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django import template
from django.utils.safestring import SafeString

from palace import oplog
from panel import labels, rows

register = template.Library()


@register.filter
def kind_label(kind: str) -> str:
    return labels.kind_label(kind)


@register.filter
def status_label(status: str) -> str:
    return labels.status_label(status)


@register.filter
def entity_kind_label(kind: str) -> str:
    return str(labels.ENTITY_KIND_LABELS.get(kind, kind))


@register.filter
def role_label(role: str) -> str:
    return str(labels.ROLE_LABELS.get(role, role))


@register.filter
def room_label(name: str) -> str:
    return labels.room_label(name)


@register.filter
def source_label(source: str) -> str:
    return str(labels.SOURCE_LABELS.get(source, source))


@register.filter
def coordinate(memory: Any) -> str:
    """`room#slot` in the display language, or an empty string for a memory not yet placed."""
    slot = getattr(memory, "slot", None)
    if slot is None:
        return ""
    return f"{labels.room_label(slot.room.name)}#{slot.number}"


@register.filter
def op_label(op: str) -> str:
    return labels.op_label(op)


@register.filter
def op_category(op: str) -> str:
    return oplog.op_category(op)


@register.filter
def category_label(category: str) -> str:
    return str(labels.CATEGORIES.get(category, category))


@register.filter
def detail_pairs(detail: object) -> list[tuple[str, str, str]]:
    return labels.detail_pairs(detail)


@register.filter
def as_list(value: Any) -> list[Any]:
    return [value]


@register.filter
def from_epoch(seconds: float) -> Any:
    return datetime.fromtimestamp(seconds, tz=UTC)


@register.simple_tag(takes_context=True)
def query_with(context: Any, **changes: Any) -> str:
    """The current query string with some parameters changed (None or "" removes one)."""
    request = context["request"]
    params = dict(request.GET.items())
    for key, value in changes.items():
        if value in (None, ""):
            params.pop(key, None)
        else:
            params[key] = str(value)
    return "?" + urlencode(params) if params else "?"


@register.filter
def make_list_of_ints(raw: str) -> list[int]:
    return [int(part) for part in raw.split()]


@register.filter
def split_words(raw: str) -> list[str]:
    return raw.split()


@register.filter
def coord_label(coordinate: str) -> str:
    """A stored `Room Name#3` coordinate in the display language."""
    room, sep, number = str(coordinate or "").rpartition("#")
    return f"{labels.room_label(room)}#{number}" if sep else str(coordinate or "")


@register.filter
def url_for(pk: Any, name: str) -> str:
    """`{{ m.pk|url_for:"memory" }}`: reverse() once per URL name, then substitute the id."""
    return rows.url_for(pk, name)


@register.simple_tag(takes_context=True)
def memory_rows(context: Any, memories: Any) -> SafeString:
    return rows.memory_rows(
        memories,
        scope=context["scope"],
        hits=context.get("hits") or {},
        request=context["request"],
        contested=context.get("contested") or {},
    )


@register.simple_tag(takes_context=True)
def log_rows(context: Any, entries: Any, fresh: bool = False) -> SafeString:
    return rows.log_rows(entries, scope=context["scope"], fresh=fresh)


@register.simple_tag
def corridor_svg(panel: Any) -> SafeString:
    return rows.corridor_svg(panel)


@register.filter
def link_label(kind: str) -> str:
    return labels.link_label(kind)


@register.filter
def get_count(counts: dict[str, int], kind: str) -> int:
    """A corridor's count of one kind of link (0 when it has none)."""
    return counts.get(kind, 0)


@register.simple_tag
def room_rows(rooms: Any) -> SafeString:
    return rows.room_rows(rooms)


@register.simple_tag
def week_bars(week: Any) -> SafeString:
    return rows.week_bars(week)


@register.filter
def search_mode(mode: str) -> str:
    """What a search ran ("hybrid", "lexical", …) in the display language; the value itself stays English."""
    return str(labels.SEARCH_MODES.get(mode, mode))


@register.filter
def search_arms(arms: list[str]) -> str:
    """The arms a search ran ("full-text + semantic") in the display language; "none" when none ran."""
    return (
        " + ".join(str(labels.SEARCH_MODES.get(arm, arm)) for arm in arms) if arms else str(labels.SEARCH_MODES["none"])
    )


@register.filter
def fallback_label(fallback: str | None) -> str:
    """A search fallback ("none", "overview") in the display language."""
    return str(labels.FALLBACKS.get(fallback or "none", fallback))
