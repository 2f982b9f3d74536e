"""Tools that walk a palace in order: memory_timeline, memory_tour, memory_neighbors, memory_stats,
memory_audit_forgotten."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp_types import CallToolResult
from pydantic import Field

from api.mcp import mapping, schemas, text
from api.mcp.registry import tool
from api.mcp.runner import ToolCall, run
from api.pagination import MAX_OFFSET
from memory.models import Memory
from memory.search import edge_neighbours, tour_fixed, tour_thematic
from memory.selectors import memory_get, memory_list
from review.selectors import memory_overview

# --- memory_timeline -----------------------------------------------------------------------------------------------


@tool("memory_timeline", title="Browse the timeline")
async def memory_timeline(
    order: Annotated[
        Literal["created", "tour"],
        Field(description="created: newest first. tour: the palace's fixed route, with room#slot coordinates."),
    ] = "created",
    kind: Annotated[schemas.Kind | None, Field(description="Only this kind.")] = None,
    project: schemas.Project = None,
    limit: Annotated[int, Field(ge=1, le=100, description="Rows per page (1–100).")] = 20,
    cursor: Annotated[str | None, Field(max_length=200, description="From a previous page (created order).")] = None,
    offset: Annotated[int, Field(ge=0, le=MAX_OFFSET, description="Stops to skip (tour order).")] = 0,
) -> Annotated[CallToolResult, schemas.TimelineOut]:
    """Browse a palace's memories in order rather than by relevance: by creation time (newest first), or along the
    palace's fixed tour route (slot order, each row with its room#slot and route position) to re-walk the palace.
    Use it to see what was recorded recently or to review a palace systematically.

    Returns rows with id=, room#slot, kind, placard and a snippet; a cursor (created) or offset (tour) for more.
    Next: memory_examine ids for full text; memory_neighbors to walk from one memory.
    """
    return await run(
        lambda call: _timeline(call, order=order, kind=kind, project=project, limit=limit, cursor=cursor, offset=offset)
    )


def _timeline(
    call: ToolCall,
    *,
    order: str,
    kind: schemas.Kind | None,
    project: str | None,
    limit: int,
    cursor: str | None,
    offset: int,
) -> tuple[schemas.TimelineOut, str]:
    palace = call.palace(project)
    labels = {palace.pk: palace.label}
    if order == "tour":
        tour = tour_fixed(palace=palace, offset=offset, limit=limit)
        stops = [s for s in tour.stops if kind is None or (s.memory is not None and s.memory.kind == kind)]
        rows = [
            schemas.TimelineRow(
                seq=s.seq,
                coordinate=s.coordinate,
                memory=mapping.memory_row(s.memory, labels) if s.memory is not None else None,
            )
            for s in stops
        ]
        out = schemas.TimelineOut(order="tour", palace=palace.label, rows=rows, total=tour.total)
        return out, text.timeline_tour(out, offset=offset, limit=limit)
    page = memory_list(user=call.user, palaces=[palace], kind=kind, cursor=cursor, limit=limit)
    rows = [
        schemas.TimelineRow(coordinate=mapping.coordinate_of(m), memory=mapping.memory_row(m, labels))
        for m in page.items
    ]
    out = schemas.TimelineOut(order="created", palace=palace.label, rows=rows, next_cursor=page.next_cursor)
    return out, text.timeline_created(out)


# --- memory_tour ---------------------------------------------------------------------------------------------------


@tool("memory_tour", title="Tour the palace")
async def memory_tour(
    mode: Annotated[
        Literal["fixed", "thematic"],
        Field(description="fixed: the whole palace in route order. thematic: 3–7 stops around `theme`."),
    ] = "fixed",
    theme: Annotated[str, Field(max_length=500, description="Required for thematic tours.")] = "",
    stops: Annotated[int, Field(ge=3, le=7, description="Thematic stops (3–7).")] = 5,
    project: schemas.Project = None,
    offset: Annotated[int, Field(ge=0, le=MAX_OFFSET)] = 0,
    limit: Annotated[int, Field(ge=1, le=500)] = 50,
) -> Annotated[CallToolResult, schemas.TourOut]:
    """Walk a palace in a stable order. `fixed` follows the palace's route slot by slot (the same order every time,
    good for sequential review); `thematic` plans 3–7 stops about a theme and visits them in route order.

    Returns stops with their route position, room#slot and memory.
    Next: memory_examine for full text, memory_neighbors from a stop.
    """
    return await run(
        lambda call: _tour(call, mode=mode, theme=theme, stops=stops, project=project, offset=offset, limit=limit)
    )


def _tour(
    call: ToolCall, *, mode: str, theme: str, stops: int, project: str | None, offset: int, limit: int
) -> tuple[schemas.TourOut, str]:
    palace = call.palace(project)
    if mode == "thematic":
        tour = tour_thematic(user=call.user, palace=palace, theme=theme, stops=stops)
    else:
        tour = tour_fixed(palace=palace, offset=offset, limit=limit)
    out = mapping.tour_out(tour=tour, palace=palace.label, labels={palace.pk: palace.label})
    return out, text.toured(out)


# --- memory_neighbors ----------------------------------------------------------------------------------------------


@tool("memory_neighbors", title="Walk the corridor from a memory")
async def memory_neighbors(
    id: schemas.MemoryId,
    hops: Annotated[int, Field(ge=1, le=3, description="How far to walk over relation edges (1–3).")] = 1,
    limit: Annotated[int, Field(ge=1, le=200)] = 20,
) -> Annotated[CallToolResult, schemas.NeighboursOut]:
    """Walk the corridor: memories related to one memory through its edges (next turn, supports, refines,
    related, contradicts, supersedes, derived from), 1–3 hops out, nearest first.

    Use it to gather context around a hit (what came before/after, what supports or contradicts it).
    Next: memory_examine the ids you need in full.
    """
    return await run(lambda call: _neighbours(call, id=id, hops=hops, limit=limit))


def _neighbours(call: ToolCall, *, id: int, hops: int, limit: int) -> tuple[schemas.NeighboursOut, str]:
    memory = memory_get(user=call.user, memory_id=id)
    labels = {memory.palace_id: memory.palace.label}
    rows = [
        schemas.NeighbourOut(
            hops=n.hops,
            via=n.via,
            direction=n.direction,
            from_id=n.from_id,
            memory=mapping.memory_row(n.memory, labels),
        )
        for n in edge_neighbours(memory=memory, hops=hops, limit=limit)
    ]
    out = schemas.NeighboursOut(origin=mapping.memory_row(memory, labels), neighbours=rows)
    return out, text.neighbours(out)


# --- memory_stats --------------------------------------------------------------------------------------------------


@tool("memory_stats", title="Palace statistics and room directory")
async def memory_stats(project: schemas.Project = None) -> Annotated[CallToolResult, schemas.StatsOut]:
    """Statistics of a palace (personal, or `project`): memories by status and kind, the signal ratio (share of
    active memories ever retrieved; "unknown" when there are none), reviews due, pending contradictions, memories
    still without a vector, and the room directory (rooms with slots used and latest placard).

    Use it to orient yourself, and to pick a room before a routed search.
    Next: memory_search with room=…, or memory_tour.
    """
    return await run(lambda call: _stats(call, project=project))


def _stats(call: ToolCall, *, project: str | None) -> tuple[schemas.StatsOut, str]:
    palace = call.palace(project)
    overview = memory_overview(user=call.user, palaces=[palace], rooms=True)
    out = mapping.stats_out(palace=palace.label, overview=overview)
    return out, text.stats(out)


# --- memory_audit_forgotten ----------------------------------------------------------------------------------------


@tool("memory_audit_forgotten", title="The closed wing")
async def memory_audit_forgotten(
    project: schemas.Project = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 20,
    cursor: Annotated[str | None, Field(max_length=200)] = None,
) -> Annotated[CallToolResult, schemas.ForgottenOut]:
    """The closed wing: recently forgotten memories of a palace with their epitaphs (why they were forgotten), so
    you can check that past forgetting was sound. Forgotten memories keep their slots and can be restored by a
    person in the panel or the REST API.

    Next: if something was forgotten wrongly, save it again (memory_save) or ask the user to restore it.
    """
    return await run(lambda call: _forgotten(call, project=project, limit=limit, cursor=cursor))


def _forgotten(
    call: ToolCall, *, project: str | None, limit: int, cursor: str | None
) -> tuple[schemas.ForgottenOut, str]:
    palace = call.palace(project)
    labels = {palace.pk: palace.label}
    page = memory_list(user=call.user, palaces=[palace], status=Memory.Status.FORGOTTEN, cursor=cursor, limit=limit)
    out = schemas.ForgottenOut(
        palace=palace.label, memories=[mapping.memory_row(m, labels) for m in page.items], next_cursor=page.next_cursor
    )
    return out, text.closed_wing(out, {m.pk: m.epitaph for m in page.items})
