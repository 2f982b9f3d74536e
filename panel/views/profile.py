"""Today's curated-profile card: one palace's curated profile (the personal palace; a project's when the scope has
one) with its current text, version history, the diff between two versions, an edit form carrying the version it
was made against (a conflict is shown, the typed text kept), and a rollback button per version — writers edit,
viewers read.

The diff is difflib's (memory.context.curated_profile.curated_diff) rendered with format_html_join, so every line is
escaped by Django rather than by hand.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.html import format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from memory.context import DiffLine, curated_checkout, curated_diff, curated_edit, curated_get, curated_history
from palace.errors import Conflict, InvalidInput
from palace.models import Palace
from palace.selectors import WRITE_ROLES, palace_get, role_in
from panel.frame import actor_of, domain_errors, is_partial, page
from panel.scope import scope_for

HISTORY_SHOWN = 20
DIFF_CLASS = {"+": "add", "-": "del", " ": "same", "@": "hunk"}


def diff_html(lines: list[DiffLine]) -> SafeString:
    """The diff as escaped, classed lines for a <pre> (format_html_join escapes each line's text)."""
    return format_html_join(  # each span is a block: no separator needed
        "", '<span class="d-{}">{}{}</span>', ((DIFF_CLASS.get(d.op, "same"), d.op, d.text) for d in lines)
    )


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None


def card_context(request: HttpRequest, palace: Palace, *, diff: int | None = None, **extra: Any) -> dict[str, Any]:
    """Everything the card shows for one palace: current text, history, a diff (version `diff` against the one
    before it; by default the current against the previous), and whether the viewer may edit."""
    history = curated_history(palace_id=palace.pk, limit=HISTORY_SHOWN)
    current = history[0] if history else None
    by_version = {v.version: v for v in history}
    shown = diff if diff in by_version else (current.version if current is not None else None)
    diff_lines: list[DiffLine] = []
    if shown is not None and shown > 1:
        before = by_version.get(shown - 1) or curated_get(palace_id=palace.pk, version=shown - 1)
        diff_lines = curated_diff(old=before.content, new=by_version[shown].content)
    return {
        "pv": palace,
        "current": current,
        "history": history,
        "diff_version": shown if shown is not None and shown > 1 else None,
        "diff": diff_html(diff_lines),
        "diff_empty": not diff_lines,
        "can_edit": role_in(user=request.user, palace=palace) in WRITE_ROLES,
        "draft": current.content if current is not None else "",
        "expected": current.version if current is not None else 0,
        **extra,
    }


def _card(request: HttpRequest, palace: Palace, status: int = 200, **extra: Any) -> HttpResponse:
    context = card_context(request, palace, **extra)
    scope = scope_for(request)
    return page(request, "panel/profile_card.html", context, scope=scope, nav="today", partial="card", status=status)


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def profile_card(request: HttpRequest, palace_id: int) -> HttpResponse:
    palace = palace_get(user=request.user, palace_id=palace_id)
    return _card(request, palace, diff=_int(request.GET.get("diff")))


@require_POST
@login_required
@domain_errors
def profile_edit(request: HttpRequest, palace_id: int) -> HttpResponse:
    palace = palace_get(user=request.user, palace_id=palace_id, write=True)
    content = request.POST.get("content", "")
    expected = _int(request.POST.get("expected_version"))
    if expected is None:
        raise InvalidInput(_("The form lost its version; reload the page."))
    try:
        row = curated_edit(palace=palace, actor=actor_of(request), content=content, expected_version=expected)
    except Conflict as exc:
        now = exc.detail.get("version", "?")
        message = _(
            "Someone saved version %(now)s while you edited version %(was)s. Your text is kept below: compare, "
            "merge and save again."
        ) % {"now": now, "was": expected}
        return _card(request, palace, status=409, conflict=message, keep_draft=content)
    if not is_partial(request):
        return redirect("today")
    return _card(request, palace, saved=_("Saved as version %(v)s.") % {"v": row.version})


@require_POST
@login_required
@domain_errors
def profile_rollback(request: HttpRequest, palace_id: int) -> HttpResponse:
    palace = palace_get(user=request.user, palace_id=palace_id, write=True)
    version = _int(request.POST.get("version"))
    if version is None:
        raise InvalidInput(_("Choose a version to roll back to."))
    expected = _int(request.POST.get("expected_version"))
    try:
        row = curated_checkout(palace=palace, actor=actor_of(request), version=version, expected_version=expected)
    except Conflict as exc:
        return _card(request, palace, status=409, conflict=exc.message)
    if not is_partial(request):
        return redirect("today")
    message = _("Rolled back: version %(v)s copies version %(old)s; nothing was deleted.")
    return _card(request, palace, saved=message % {"v": row.version, "old": version})
