"""Corridor: a bird's-eye graph of rooms and the links between their memories (one panel per palace), a room's
memories and corridors, neighbours of a memory (1–3 hops), and the retrieval bench (a query's ranked hits with their
retrieval labels and scores)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from memory.search import MAX_HOPS, SearchRequest, edge_neighbours, memory_search
from memory.selectors import (
    LINK_KINDS,
    memory_get,
    room_corridors,
    room_directory_page,
    room_graph,
    room_memories,
)
from palace.errors import InvalidInput
from palace.selectors import palace_get
from palace.structure import room_visible
from panel import labels
from panel.forms import int_or_none
from panel.frame import domain_errors, page
from panel.scope import scope_for
from panel.shaping import corridor_graph


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def corridor(request: HttpRequest) -> HttpResponse:
    scope = scope_for(request)
    mine = _("my palace")
    palaces = [(p.pk, mine if p.kind == "personal" else p.origin_key or p.name) for p in scope.palaces]
    graph = corridor_graph(room_graph(palace_ids=scope.palace_ids), palaces=palaces)
    context = {"graph": graph, "link_kinds": LINK_KINDS, "q": ""}
    return page(request, "panel/corridor.html", context, scope=scope, nav="corridor", partial="graph")


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def rooms(request: HttpRequest) -> HttpResponse:
    """The whole room directory of one palace, a kind at a time, keyset-paged (Today shows the newest few)."""
    scope = scope_for(request)
    wanted = int_or_none(request.GET.get("palace"))
    palace = next((p for p in scope.palaces if wanted in (None, p.pk)), None)
    if palace is None and wanted is not None:  # a palace outside the current scope: the access function decides
        palace = palace_get(user=request.user, palace_id=wanted)
    kind = request.GET.get("kind") or labels.KINDS[0]
    if palace is None or kind not in labels.KINDS:
        raise InvalidInput(_("Choose a palace and one of the room kinds."), field="kind")
    after = int_or_none(request.GET.get("after"))
    rows, cursor = room_directory_page(palace=palace, kind=kind, after=after)
    context = {"palace": palace, "kind": kind, "kinds": labels.KINDS, "rows": rows, "after": after, "cursor": cursor}
    return page(request, "panel/rooms.html", context, scope=scope, nav="corridor", partial="rows")


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def room(request: HttpRequest, room_id: int) -> HttpResponse:
    found = room_visible(user=request.user, room_id=room_id)
    context = {"room": found, "memories": room_memories(room=found), "corridors": room_corridors(room=found)}
    context["link_kinds"] = LINK_KINDS
    return page(request, "panel/corridor_room.html", context, scope=scope_for(request), nav="corridor", partial="room")


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def neighbours(request: HttpRequest, memory_id: int) -> HttpResponse:
    memory = memory_get(user=request.user, memory_id=memory_id)
    hops = min(max(int_or_none(request.GET.get("hops")) or 1, 1), MAX_HOPS)
    context = {"m": memory, "hops": hops, "near": edge_neighbours(memory=memory, hops=hops)}
    return page(request, "panel/neighbours.html", context, scope=scope_for(request), nav="corridor", partial="near")


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def bench(request: HttpRequest) -> HttpResponse:
    scope = scope_for(request)
    q = request.GET.get("q", "").strip()[:500]
    result = None
    if q:
        result = memory_search(
            user=request.user,
            request=SearchRequest(query=q, palace_ids=scope.palace_ids, limit=10),
            reinforce=False,
            register_batch=False,
        )
    context = {"q": q, "result": result}
    return page(request, "panel/bench.html", context, scope=scope, nav="corridor", partial="hits")
