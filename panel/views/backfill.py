"""Backfill: upload past transcripts (files, several, or an archive of ~/.claude/projects), set the rules, see the
zero-cost estimate (htmx swaps it in; the chosen files stay in the form), run it on the worker, follow its progress
live (the worker's progress events reach the page through the panel's websocket: panel/consumers.py), pause and
resume, and the history of the user's runs with their results.

Uploads are another machine's files, so git is never read for them (`use_git=False`): a session's project comes
from a mapping (CWD=ORIGIN, one a line), else it goes to the personal palace; the estimate says which and why, and
marks palaces outside the current scope. The services (capture.backfill) decide everything; these views read the
form, call one, and render its answer.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from capture.backfill import (
    Transcripts,
    backfill_estimate,
    backfill_pause,
    backfill_read_uploads,
    backfill_resume,
    backfill_run_view,
    backfill_runs,
    backfill_start,
)
from capture.importers import BackfillRules, RulesError
from capture.tasks import enqueue_backfill_run
from palace.errors import AtriumError, InvalidInput
from panel.frame import domain_errors, is_partial, page, user_of
from panel.scope import scope_for

RULE_FIELDS = ("window_days", "turns_per_session", "max_turns", "include_sidechains", "include_no_cwd", "mappings")
FLAGS = ("include_sidechains", "include_no_cwd")
DEFAULTS = {"window_days": 7, "turns_per_session": 20, "max_turns": 200, "mappings": ""}


def _form(request: HttpRequest) -> dict[str, Any]:
    """The rules as the form sent them (to show them again), with unchecked boxes as false."""
    values: dict[str, Any] = {name: request.POST.get(name, "") for name in RULE_FIELDS if name not in FLAGS}
    values.update({name: name in request.POST for name in FLAGS})
    return values


def _rules(values: dict[str, Any]) -> BackfillRules:
    try:
        return BackfillRules.from_mapping({k: v for k, v in values.items() if v != "" or k == "mappings"})
    except RulesError as exc:
        raise InvalidInput(str(exc), field=exc.field) from None


def _read(request: HttpRequest) -> Transcripts:
    files = request.FILES.getlist("files")
    return backfill_read_uploads(uploads=[(f.name or "upload", f.read()) for f in files])


def _page(request: HttpRequest, context: dict[str, Any], *, status: int = 200) -> HttpResponse:
    user = user_of(request)
    context = {
        "form": {**DEFAULTS, "include_sidechains": False, "include_no_cwd": False},
        "runs": [backfill_run_view(run=r) for r in backfill_runs(user=user, limit=20)],
        **context,
    }
    return page(request, "panel/backfill.html", context, scope=scope_for(request), nav="backfill", status=status)


@require_GET
@login_required
def backfill(request: HttpRequest) -> HttpResponse:
    return _page(request, {"shown": request.GET.get("run", "")})


@require_POST
@login_required
def backfill_estimate_view(request: HttpRequest) -> HttpResponse:
    """The estimate of the uploaded files with these rules (nothing stored); a bad file or rule comes back in
    place of the estimate with its message (422)."""
    values, scope = _form(request), scope_for(request)
    try:
        read = _read(request)
        plan = backfill_estimate(
            user=user_of(request), sessions=read.sessions, rules=_rules(values), use_git=False, rejected=read.rejected
        )
    except AtriumError as exc:
        return _respond(request, {"error": exc.message, "form": values}, exc.status)
    context: dict[str, Any] = {"estimate": plan.as_dict(), "form": values, "in_scope": set(scope.palace_ids)}
    return _respond(request, context, 200)


def _respond(request: HttpRequest, context: dict[str, Any], status: int) -> HttpResponse:
    if is_partial(request):
        return render(request, "panel/backfill.html#estimate", {**context, "scope": scope_for(request)}, status=status)
    return _page(request, context, status=status)


@require_POST
@login_required
def backfill_run_start(request: HttpRequest) -> HttpResponse:
    """Store the kept turns, queue the run, and show the page with it (its bar moves as the worker reports)."""
    values = _form(request)
    try:
        read = _read(request)
        run = backfill_start(
            user=user_of(request),
            sessions=read.sessions,
            rules=_rules(values),
            files=read.files,
            use_git=False,
            rejected=read.rejected,
        )
    except AtriumError as exc:
        return _page(request, {"error": exc.message, "form": values}, status=exc.status)
    _queue(run.pk)
    return redirect(f"{reverse('backfill')}?run={run.pk}")


def _queue(run_id: int) -> None:
    try:
        enqueue_backfill_run(run_id)
    except Exception:  # stored; a worker that starts takes up a queued run (capture.tasks)
        return


def _one(request: HttpRequest, run: Any) -> HttpResponse:
    if is_partial(request):
        return render(request, "panel/_backfill_run.html", {"run": backfill_run_view(run=run)})
    return redirect("backfill")


@require_POST
@login_required
@domain_errors
def backfill_run_pause(request: HttpRequest, run_id: int) -> HttpResponse:
    return _one(request, backfill_pause(user=user_of(request), run_id=run_id))


@require_POST
@login_required
@domain_errors
def backfill_run_resume(request: HttpRequest, run_id: int) -> HttpResponse:
    run = backfill_resume(user=user_of(request), run_id=run_id)
    _queue(run.pk)
    return _one(request, run)
