"""Forms and query-string filters for the panel. Bad values fall back to defaults rather than erroring."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from django import forms
from django.conf import settings
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from accounts.usersettings import CAPTURE_MODES, SEARCH_FALLBACKS
from memory.selectors import ORDERS, cursor_ok
from panel import labels

STATUSES = ("active", "archived", "forgotten", "superseded", "all")
SORTS = ORDERS  # newest first ("new") or along the tour route ("route")
CURSOR_CHARS = 120


# The deepest offset a panel list pages to, as the REST API's (api/pagination.py MAX_OFFSET; the panel may not import
# api): deeper is a scan for nothing, and a number past bigint reached PostgreSQL's OFFSET as a 500.
MAX_OFFSET = 100_000


def offset_in_bounds(raw: Any) -> int:
    """A page offset from a query string: 0 for junk or below, MAX_OFFSET at most."""
    return min(max(0, int_or_none(raw) or 0), MAX_OFFSET)


def int_or_none(raw: Any) -> int | None:
    try:
        return int(raw) if raw not in (None, "") else None
    except (TypeError, ValueError):
        return None


def _cursor(raw: str | None, *, order: str) -> str:
    """A cursor the list issued, or "" (the first page) for a stale or hand-made one."""
    cursor = (raw or "")[:CURSOR_CHARS]
    return cursor if cursor and cursor_ok(cursor, order=order) else ""


@dataclass
class ListFilters:
    q: str = ""
    status: str = "active"
    kind: str = ""
    room: int | None = None
    due: bool = False
    sort: str = "new"
    cursor: str = ""
    fallback: str = ""  # what a search falls back to on a miss: "" (the user's setting), "none" or "overview"

    @classmethod
    def from_request(cls, request: HttpRequest) -> ListFilters:
        get = request.GET
        status = get.get("status", "active")
        kind = get.get("kind", "")
        sort = get.get("sort", "new")
        sort = sort if sort in SORTS else "new"
        fallback = get.get("fallback", "")
        return cls(
            q=get.get("q", "").strip()[:500],
            status=status if status in STATUSES else "active",
            kind=kind if kind in labels.KINDS else "",
            room=int_or_none(get.get("room")),
            due=get.get("due") == "1",
            sort=sort,
            cursor=_cursor(get.get("after"), order=sort),
            fallback=fallback if fallback in SEARCH_FALLBACKS else "",
        )


class MemoryEditForm(forms.Form):
    content = forms.CharField(
        label=_("Content"), widget=forms.Textarea(attrs={"rows": 4}), max_length=settings.ATRIUM_MAX_CONTENT_CHARS
    )
    placard = forms.CharField(label=_("Placard"), max_length=200, required=False)
    version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)


@dataclass
class EpisodeFilters:
    start: date | None = None
    end: date | None = None
    cursor: str = ""

    @classmethod
    def from_request(cls, request: HttpRequest) -> EpisodeFilters:
        return cls(
            start=_day(request.GET.get("from")),
            end=_day(request.GET.get("to")),
            cursor=_cursor(request.GET.get("after"), order="episodes"),
        )


def _day(raw: str | None) -> date | None:
    try:
        return date.fromisoformat(raw) if raw else None
    except ValueError:
        return None


ROLE_CHOICES = [("owner", _("owner")), ("editor", _("editor")), ("viewer", _("viewer"))]


class ProjectCreateForm(forms.Form):
    origin = forms.CharField(label=_("Git origin"), max_length=400)
    name = forms.CharField(label=_("Name"), max_length=200, required=False)


class MemberForm(forms.Form):
    """A member named by username; `role` only where the action needs it (invite, change role)."""

    username = forms.CharField(label=_("Username"), max_length=150)
    role = forms.ChoiceField(label=_("Role"), choices=ROLE_CHOICES, required=False)


class SettingsForm(forms.Form):
    """The account page's settings (accounts.UserSettings)."""

    search_fallback = forms.ChoiceField(
        label=_("When a search matches nothing"),
        choices=[(value, labels.FALLBACKS[value]) for value in SEARCH_FALLBACKS],
        widget=forms.RadioSelect,
    )
    # Not required: a post made by hand without it leaves the capture mode as it is (the page always sends it).
    capture_mode = forms.ChoiceField(
        label=_("Capture mode"),
        choices=[(value, labels.CAPTURE_MODES[value]) for value in CAPTURE_MODES],
        widget=forms.RadioSelect,
        required=False,
    )
