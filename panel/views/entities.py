"""Entities: the lexicon of the chosen scope (kind filter, name/alias search, memory counts, last mentioned) and one
entity's page — its aliases, every memory linked to it, its facts timeline (a region loaded from
/entities/<id>/facts/), and for writers the kind, merge, rename and alias forms (the same services as REST; the services
refuse viewers whatever the page shows)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from memory.knowledge import (
    entity_aliases_edit,
    entity_get,
    entity_kind_set,
    entity_kinds,
    entity_list,
    entity_memories,
    entity_merge,
    entity_rename,
)
from memory.models import Entity
from palace.errors import AtriumError, InvalidInput, NotFound
from palace.selectors import WRITE_ROLES, role_in
from panel.forms import int_or_none, offset_in_bounds
from panel.frame import actor_of, domain_errors, is_partial, page
from panel.scope import scope_for

PAGE_SIZE = 50
LINKED_PAGE = 50
MERGE_CHOICES = 200
ORDERS = ("recent", "name", "count")


def _filters(request: HttpRequest) -> dict[str, Any]:
    order = request.GET.get("order", "recent")
    return {
        "kind": request.GET.get("kind", "")[:32],
        "q": request.GET.get("q", "").strip()[:200],
        "order": order if order in ORDERS else "recent",
        "page": int_or_none(request.GET.get("page")) or 1,
    }


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def entities(request: HttpRequest) -> HttpResponse:
    """The list. Paged with Django's Paginator (page numbers a person can share); htmx swaps only the list."""
    scope = scope_for(request)
    f = _filters(request)
    rows = entity_list(palace_ids=scope.palace_ids, kind=f["kind"] or None, q=f["q"], order=f["order"])
    listing = Paginator(rows, PAGE_SIZE).get_page(f["page"])
    context: dict[str, Any] = {"f": f, "listing": listing}
    if not is_partial(request):  # the toolbar is outside the swapped list
        context["kinds"] = entity_kinds(palace_ids=scope.palace_ids)
    return page(request, "panel/entities.html", context, scope=scope, nav="entities", partial="list")


def _detail(
    request: HttpRequest,
    entity: Entity,
    *,
    error: str = "",
    merge_error: str = "",
    kind_error: str = "",
    status: int = 200,
) -> HttpResponse:
    offset = offset_in_bounds(request.GET.get("offset"))
    writable = role_in(user=request.user, palace=entity.palace) in WRITE_ROLES
    others = (
        entity_list(palace_ids=[entity.palace_id], order="name", besides=entity.pk)[:MERGE_CHOICES] if writable else []
    )
    context = {
        "entity": entity,
        "linked": entity_memories(entity=entity, offset=offset, limit=LINKED_PAGE),
        "writable": writable,
        "others": others,
        "error": error,
        "merge_error": merge_error,
        "kind_error": kind_error,
        "kind_choices": Entity.Kind.values,
    }
    return page(
        request, "panel/entity.html", context, scope=scope_for(request), nav="entities", partial="linked", status=status
    )


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def entity(request: HttpRequest, entity_id: int) -> HttpResponse:
    """One entity. A merged one leads to the entity it was merged into."""
    row = entity_get(user=request.user, entity_id=entity_id)
    if row.merged_into_id is not None:
        return redirect("entity", entity_id=row.merged_into_id)
    return _detail(request, row)


def _write(request: HttpRequest, entity_id: int, change: Callable[[], int], *, form: str = "") -> HttpResponse:
    """Run a write; on success go to the entity that now holds the data, on a refusal show the page with why (inside
    the `form` that was refused when it says where: the merge form)."""
    try:
        target = change()
    except NotFound as exc:
        raise Http404(exc.message) from exc
    except AtriumError as exc:
        row = entity_get(user=request.user, entity_id=entity_id)
        where = {f"{form}_error": exc.message} if form in ("merge", "kind") else {"error": exc.message}
        return _detail(request, row, status=exc.status, **where)
    return redirect("entity", entity_id=target)


@require_POST
@login_required
@domain_errors
def entity_rename_view(request: HttpRequest, entity_id: int) -> HttpResponse:
    name = request.POST.get("name", "")
    return _write(request, entity_id, lambda: entity_rename(entity_id=entity_id, name=name, actor=actor_of(request)).pk)


@require_POST
@login_required
@domain_errors
def entity_aliases_view(request: HttpRequest, entity_id: int) -> HttpResponse:
    """`add`: one or more aliases, comma-separated; `remove`: an alias (a button per alias)."""
    add = [a for a in request.POST.get("add", "").split(",") if a.strip()]
    remove = [r for r in request.POST.getlist("remove") if r.strip()]
    return _write(
        request,
        entity_id,
        lambda: entity_aliases_edit(entity_id=entity_id, actor=actor_of(request), add=add, remove=remove).pk,
    )


@require_POST
@login_required
@domain_errors
def entity_merge_view(request: HttpRequest, entity_id: int) -> HttpResponse:
    """Merge this entity into the one chosen (`into`); the page of the survivor follows."""
    into = int_or_none(request.POST.get("into"))

    def merge() -> int:
        if into is None:
            raise InvalidInput(_("Choose the entity to merge this one into."), field="into")
        return entity_merge(entity_id=entity_id, into_id=into, actor=actor_of(request)).survivor.pk

    return _write(request, entity_id, merge, form="merge")


@require_POST
@login_required
@domain_errors
def entity_kind_view(request: HttpRequest, entity_id: int) -> HttpResponse:
    """Change the entity's kind (`kind`, one of Entity.Kind); a refusal shows inside the kind form."""
    kind = request.POST.get("kind", "")

    def change() -> int:
        if kind not in Entity.Kind.values:
            raise InvalidInput(_("Choose one of the kinds."), field="kind")
        return entity_kind_set(entity_id=entity_id, kind=kind, actor=actor_of(request)).pk

    return _write(request, entity_id, change, form="kind")
