"""Palace: the memory list (search, filters, sort, keyset pages), inline detail and edit, forget/restore, bringing
back an earlier version, undoing a distillation, batch."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy as _lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from accounts.usersettings import FallbackChoice, search_fallback_choose
from memory import lifecycle
from memory import selectors as memories
from memory.jobs import distill_revert
from memory.judge import adjudication_why, adjudications_for_edges
from memory.lifecycle import edge_resolve
from memory.models import Edge, Memory
from memory.search import SearchRequest, SearchResult, memory_search
from palace import selectors
from palace.errors import AtriumError, InvalidInput, NotFound
from palace.structure import room_in
from panel import labels
from panel.contrast import contrast, readable_why
from panel.forms import STATUSES, ListFilters, MemoryEditForm
from panel.frame import actor_of, domain_errors, is_partial, page, user_of
from panel.scope import Scope, scope_for
from panel.views.judge import judge_page
from review.selectors import QUEUE_MAX, review_due_ids

PAGE_SIZE = 50
CHAIN_DEPTH = 20  # versions shown each way on a memory's detail
SOURCE = "panel"
# The service's refusals are written for agents (English, argument names); the panel says them in the page's language.
RESOLVE_REFUSALS = {
    ("both_stand", "reason"): _lazy("“Both stand” needs a reason: say why both memories stand."),
    ("merge", "content"): _lazy("“Merge” needs the corrected text that replaces both memories."),
}


def _export_query(scope: Any) -> str:
    """The export links' scope (REST GET /api/v1/export): the project in view, else everything the user may read."""
    return urlencode({"project": scope.project.origin_key}) if scope.mode == "project" and scope.project else ""


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def memory_list(request: HttpRequest) -> HttpResponse:
    scope = scope_for(request)
    f = ListFilters.from_request(request)
    room = room_in(palace_ids=scope.palace_ids, room_id=f.room) if f.room else None
    context: dict[str, Any] = {"f": f, "kinds": labels.KINDS, "statuses": STATUSES, "room": room}
    context["fallbacks"] = labels.FALLBACKS
    status = None if f.status == "all" else f.status
    if f.q:
        result, context["fallback"] = _search(request, f, scope=scope, room=room.name if room else None, status=status)
        rows, cursor, hits = [h.memory for h in result.hits], "", {h.memory.pk: h for h in result.hits}
    else:
        due = review_due_ids(user=request.user, palace_ids=scope.palace_ids, limit=QUEUE_MAX) if f.due else None
        found = memories.memory_list(
            user=request.user,
            palaces=scope.palaces,
            status=status,
            kind=f.kind or None,
            room=f.room,
            ids=due,
            order=f.sort,
            cursor=f.cursor or None,
            limit=PAGE_SIZE,
            slim=True,
        )
        rows, cursor, hits = found.items, found.next_cursor or "", {}
        result = None
    context.update(rows=rows, cursor=cursor, hits=hits, search=result, export_query=_export_query(scope))
    context["contested"] = memories.open_contradictions(memory_ids=[m.pk for m in rows])
    partial = "more" if f.cursor else "results"
    return page(request, "panel/palace.html", context, scope=scope, nav="palace", partial=partial)


def _search(
    request: HttpRequest, f: ListFilters, *, scope: Scope, room: str | None, status: str | None
) -> tuple[SearchResult, FallbackChoice]:
    """The one search (memory.search), recording nothing: a GET. The fallback is the one chosen in the form, else
    the user's setting (accounts.usersettings); the page says which, and which arms ran."""
    fallback = search_fallback_choose(user=request.user, asked=f.fallback or None)
    result = memory_search(
        user=user_of(request),
        request=SearchRequest(
            query=f.q,
            palace_ids=scope.palace_ids,
            kind=f.kind or None,
            room=room,
            status=status,
            limit=50,
            fallback=fallback.for_search,
        ),
        reinforce=False,
        register_batch=False,
    )
    return result, fallback


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def memory_detail(request: HttpRequest, memory_id: int) -> HttpResponse:
    return _detail(request, memories.memory_get(user=request.user, memory_id=memory_id))


def _why_in_words(edge: Edge, ruling: Any) -> str:
    """The ruling in words, as the Judge page says it (panel.contrast); the stored label stays beside it."""
    if ruling is None:
        return ""
    older, newer = sorted((edge.from_memory, edge.to_memory), key=lambda m: (m.created_at, m.pk))
    return readable_why(ruling, contrast(older.content, newer.content).changes)


def _detail(
    request: HttpRequest, memory: Memory, status: int = 200, refusal: dict[str, Any] | None = None
) -> HttpResponse:
    """The detail page (or its region for htmx); `refusal` names the form that was refused, its message and what was
    typed, so the form shows why in place and keeps the text."""
    chain = memories.memory_chain(memory=memory, depth=CHAIN_DEPTH, slim=True)
    edges = memories.memory_edges(memory=memory)
    # "Why was this deferred?": the judge's ruling beside each contradiction.
    rulings = adjudications_for_edges(edge_ids=[e.pk for e in edges if e.kind == Edge.Kind.CONTRADICTS])
    for edge in edges:
        ruling = rulings.get(edge.pk)
        setattr(edge, "judged", _why_in_words(edge, ruling))  # noqa: B010
        setattr(edge, "judged_raw", adjudication_why(ruling) if ruling else "")  # noqa: B010
    context = {
        "m": memory,
        "older": chain.older,
        "newer": chain.newer,
        "edges": edges,
        "can_write": selectors.role_in(user=request.user, palace=memory.palace) in selectors.WRITE_ROLES,
        "form": MemoryEditForm(
            initial={"content": memory.content, "placard": memory.placard, "version": memory.version}
        ),
        **(refusal or {}),
    }
    scope = scope_for(request)
    return page(request, "panel/memory.html", context, scope=scope, nav="palace", partial="detail", status=status)


@require_http_methods(["POST"])
@login_required
@domain_errors
def memory_edit(request: HttpRequest, memory_id: int) -> HttpResponse:
    memory = memories.memory_get(user=request.user, memory_id=memory_id, write=True)
    form = MemoryEditForm(request.POST)
    if not form.is_valid():  # shown in the edit form, the typed text kept (htmx swaps a 422: _base.html)
        message = _("Please correct the content: %s") % "; ".join(str(e) for es in form.errors.values() for e in es)
        return _detail(request, memory, status=422, refusal={"edit_error": message, "form": form})
    new = lifecycle.memory_update(
        memory_id=memory.pk,
        actor=actor_of(request),
        content=form.cleaned_data["content"],
        placard=form.cleaned_data["placard"],
        expected_version=form.cleaned_data["version"],
        source=SOURCE,
    )
    return _after_write(request, new.pk)


@require_POST
@login_required
@domain_errors
def memory_forget(request: HttpRequest, memory_id: int) -> HttpResponse:
    memory = memories.memory_get(user=request.user, memory_id=memory_id, write=True)
    reason = request.POST.get("reason", "").strip()[:500]
    if not reason:  # the reason is the memory's epitaph and the log's "why": a forget without one is refused
        refused = _("Say why this memory should be forgotten: the reason is kept with it and in the log.")
        return _detail(request, memory, status=422, refusal={"forget_error": refused})
    lifecycle.memory_forget(memory_id=memory.pk, actor=actor_of(request), reason=reason)
    return _after_write(request, memory.pk)


@require_POST
@login_required
@domain_errors
def memory_restore(request: HttpRequest, memory_id: int) -> HttpResponse:
    memory = memories.memory_get(user=request.user, memory_id=memory_id, write=True)
    lifecycle.memory_restore(memory_id=memory.pk, actor=actor_of(request))
    return _after_write(request, memory.pk)


@require_POST
@login_required
@domain_errors
def memory_checkout(request: HttpRequest, memory_id: int) -> HttpResponse:
    """Bring back an earlier version (memory.lifecycle.memory_checkout); shows the new current version."""
    memory = memories.memory_get(user=request.user, memory_id=memory_id, write=True)
    new = lifecycle.memory_checkout(memory_id=memory.pk, actor=actor_of(request), source=SOURCE)
    return _after_write(request, new.pk)


@require_POST
@login_required
@domain_errors
def memory_distill_undo(request: HttpRequest, memory_id: int) -> HttpResponse:
    memory = memories.memory_get(user=request.user, memory_id=memory_id, write=True)
    distill_revert(rule_id=memory.pk, actor=actor_of(request), reason=_("undone in the panel"))
    return _after_write(request, memory.pk)


@require_POST
@login_required
@domain_errors
def batch(request: HttpRequest) -> HttpResponse:
    """Forget or restore the checked memories; each one is checked for write access on its own."""
    action = request.POST.get("action", "")
    if action not in {"forget", "restore"}:
        raise InvalidInput(_("Choose forget or restore."))
    ids = [int(v) for v in request.POST.getlist("ids") if v.isascii() and v.isdigit()][:100]  # not "²"
    if not ids:
        raise InvalidInput(_("Select at least one memory."))
    actor = actor_of(request)
    checked = [memories.memory_get(user=request.user, memory_id=pk, write=True) for pk in ids]
    for memory in checked:
        if action == "forget":
            lifecycle.memory_forget(memory_id=memory.pk, actor=actor, reason=_("forgotten in the panel"))
        else:
            lifecycle.memory_restore(memory_id=memory.pk, actor=actor)
    return redirect("palace")


def _after_write(request: HttpRequest, memory_id: int) -> HttpResponse:
    """htmx: the refreshed detail region in place; a plain form post: back to the detail page."""
    if is_partial(request):
        return _detail(request, memories.memory_get(user=request.user, memory_id=memory_id))
    return redirect("memory", memory_id=memory_id)


@require_POST
@login_required
@domain_errors
def contradiction_resolve(request: HttpRequest, edge_id: int) -> HttpResponse:
    """Decide a pending contradiction from a memory's detail (memory.lifecycle.resolve); back to that memory, or to the
    merged one. An edge in a palace the user may not write answers 404 (a viewer: 403)."""
    decision = request.POST.get("decision", "")
    reason = request.POST.get("reason", "")[:500]
    content = request.POST.get("content", "") if decision == "merge" else ""
    back = request.POST.get("back", "")
    try:
        result = edge_resolve(
            edge_id=edge_id, decision=decision, actor=actor_of(request), reason=reason, content=content, source=SOURCE
        )
    except NotFound:
        raise
    except AtriumError as exc:
        message = RESOLVE_REFUSALS.get((decision, str(exc.detail.get("field", ""))), exc.message)
        refused = {"edge": edge_id, "message": message}
        refused.update(reason=reason, content=content)
        return _resolve_refused(request, back, refused, exc.status)
    if back == "judge":
        return redirect("judge")
    target = result.new_memory.pk if result.new_memory is not None else int(back) if back.isdigit() else result.newer_id
    return redirect("memory", memory_id=target)


def _resolve_refused(request: HttpRequest, back: str, refused: dict[str, Any], status: int) -> HttpResponse:
    """The page the form was on, again, with the refusal inside the edge's form and the typed text kept (a 4xx)."""
    if back.isdigit():
        memory = memories.memory_get(user=request.user, memory_id=int(back))
        return _detail(request, memory, status=status, refusal={"resolve_error": refused})
    return judge_page(request, resolve_error=refused, status=status)
