"""Judge: the open contradictions of the chosen scope side by side with the four decisions, the judge's recent
rulings with filters, the pending distillation proposals with Apply / Reject (the same services as the REST
routes), and the judge settings card with Test connection (the key never in the page): shown to holders of
memory.view_judgesettings, editable and testable by holders of memory.change_judgesettings — the same check as REST
and the admin (memory.judge.judge_settings_allowed)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from memory.jobs import distill_proposal_apply, distill_proposal_reject
from memory.judge import (
    FALLBACK_REASONS,
    adjudications_recent,
    contradictions_open,
    judge_settings_allowed,
    judge_settings_public,
    judge_settings_update,
    judge_test_connection,
)
from memory.models import DEFAULT_TIMEOUT_MS
from memory.selectors import distill_proposals_pending
from panel.contrast import contrast, raw_label, readable_why
from panel.forms import int_or_none
from panel.frame import actor_of, domain_errors, is_partial, page
from panel.scope import scope_for

VERDICTS = ("merge", "accept", "defer")


def _filters(request: HttpRequest) -> dict[str, Any]:
    verdict = request.GET.get("verdict", "")
    by = request.GET.get("by", "")
    fallback = request.GET.get("fallback", "")
    return {
        "verdict": verdict if verdict in VERDICTS else "",
        "by": by if by in ("model", "rules") else "",
        "fallback": fallback if fallback in FALLBACK_REASONS else "",
    }


def _pairs(edges: list[Any]) -> list[Any]:
    """Each open edge with its two memories in time order, their differing words marked and the ruling in words
    (panel.contrast); the stored label stays beside it (`raw`), as every label must."""
    for e in edges:
        older, newer = sorted((e.from_memory, e.to_memory), key=lambda m: (m.created_at, m.pk))
        shown = contrast(older.content, newer.content)
        e.older, e.newer, e.contrast = older, newer, shown
        e.why, e.raw = readable_why(e.ruling, shown.changes), raw_label(e.ruling)
    return edges


def judge_page(
    request: HttpRequest, *, test_report: Any = None, resolve_error: dict[str, Any] | None = None, status: int = 200
) -> HttpResponse:
    """The Judge page (or its region for htmx); `resolve_error` shows a refused decision inside its edge's form."""
    scope = scope_for(request)
    f = _filters(request)
    context: dict[str, Any] = {
        "edges": _pairs(contradictions_open(palace_ids=scope.palace_ids)),
        "rulings": adjudications_recent(
            palace_ids=scope.palace_ids,
            verdict=f["verdict"] or None,
            model_took_part={"model": True, "rules": False}.get(f["by"]),
            fallback_reason=f["fallback"] or None,
        ),
        "proposals": distill_proposals_pending(scope.palace_ids),
        "filters": f,
        "verdicts": VERDICTS,
        "fallbacks": FALLBACK_REASONS,
        "writable": {pid for pid, role in scope.roles.items() if role in ("owner", "editor")},
        "settings_view": judge_settings_allowed(request.user, change=False),
        "settings_change": judge_settings_allowed(request.user, change=True),
        "test_report": test_report,
        "resolve_error": resolve_error,
    }
    if context["settings_view"]:
        context["settings"] = judge_settings_public()
    return page(request, "panel/judge.html", context, scope=scope, nav="judge", partial="judge", status=status)


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def judge(request: HttpRequest) -> HttpResponse:
    return judge_page(request)


def _posted(request: HttpRequest) -> dict[str, Any]:
    return {
        "base_url": request.POST.get("base_url", ""),
        "model": request.POST.get("model", ""),
        "timeout_ms": int_or_none(request.POST.get("timeout_ms")) or DEFAULT_TIMEOUT_MS,
        "api_key": request.POST.get("api_key", ""),
    }


@require_POST
@login_required
@domain_errors
def judge_settings(request: HttpRequest) -> HttpResponse:
    """Save the settings card (memory.change_judgesettings; the service refuses anyone else)."""
    judge_settings_update(
        actor=actor_of(request),
        enabled=request.POST.get("enabled") == "on",
        clear_key=request.POST.get("clear_key") == "on",
        **_posted(request),
    )
    return redirect("judge")


@require_POST
@login_required
@domain_errors
def judge_test(request: HttpRequest) -> HttpResponse:
    """Test connection with the values as typed; nothing is stored."""
    report = judge_test_connection(actor=actor_of(request), **_posted(request))
    return judge_page(request, test_report=report)


def _back(request: HttpRequest) -> HttpResponse:
    """An htmx button gets the Judge region re-rendered; a plain form (no JS) goes back to the page."""
    return judge_page(request) if is_partial(request) else redirect("judge")


@require_POST
@login_required
@domain_errors
def proposal_apply(request: HttpRequest, proposal_id: int) -> HttpResponse:
    """Apply a pending distillation proposal: the same service as the REST route and `memory_distill apply`."""
    distill_proposal_apply(proposal_id=proposal_id, actor=actor_of(request))
    return _back(request)


@require_POST
@login_required
@domain_errors
def proposal_reject(request: HttpRequest, proposal_id: int) -> HttpResponse:
    """Reject a pending distillation proposal; the same member set is not proposed again."""
    distill_proposal_reject(
        proposal_id=proposal_id, actor=actor_of(request), reason=request.POST.get("reason", "")[:500]
    )
    return _back(request)
