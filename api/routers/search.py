"""REST door to retrieval: `GET /api/v1/search?query=…` and `POST /api/v1/search` with the same fields as JSON.

`palace` (id) or `project` (a git origin) narrows the search to one palace; neither searches every palace the caller
may read. The header says what ran (`mode`, `degraded`), `how` says how the search was made (the arms that ran, the
similarity floor and what fell below it, query rewriting, the fallback and whether anything matched), each hit says
how it was found (`label`), and on a miss with `fallback="overview"` the `overview` section says what the palaces hold,
labelled as an overview, never as hits. Without `fallback` the user's setting applies (accounts.usersettings).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from pydantic import ConfigDict

from accounts.usersettings import NO_FALLBACK, FallbackChoice, search_fallback_choose
from api.auth import caller_of
from api.routers.facts import FactOut, fact_dict
from api.routers.memories import EntityTagOut
from api.schemas import FALLBACK_HELP, ErrorOut, FallbackName, Instant, ProjectOrigin, zone_note
from memory.models import Memory
from memory.search import MAX_LIMIT, MAX_QUERY_CHARS, Overview, SearchRequest, SearchResult, memory_search
from palace.errors import InvalidInput
from palace.kinds import KindName
from palace.selectors import palace_get

router = Router(tags=["search"])

ERRORS: dict[int, Any] = {401: ErrorOut, 404: ErrorOut, 422: ErrorOut}
StatusName = Literal["active", "archived", "forgotten", "superseded", "any"]


class SearchIn(Schema):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    palace: int | None = None
    project: ProjectOrigin | None = None
    kind: KindName | None = None
    room: str | None = Field(default=None, max_length=120)
    status: StatusName = "active"
    as_of: Instant | None = None
    known_at: Instant | None = None
    limit: int = Field(default=10, ge=1, le=MAX_LIMIT)
    fallback: FallbackName | None = Field(default=None, description=FALLBACK_HELP)


class HitMemoryOut(Schema):
    id: int
    palace: int
    kind: str
    content: str
    placard: str
    status: str
    speaker: str
    confidence: float
    hit_count: int
    occurred_at: datetime
    created_at: datetime
    source_session: str
    source_turn: str


class HitOut(Schema):
    ref: str
    label: str
    score: float
    coordinate: str | None
    cues: list[str]
    expanded_from: int | None
    entities: list[EntityTagOut] = Field(description="the entities the memory is linked to")
    memory: HitMemoryOut
    facts: list[FactOut] = Field(description="facts of the entities this memory is linked to, true at that point")


class SearchHowOut(Schema):
    arms: list[str] = Field(description="the retrieval arms that ran: lexical (full text), semantic (vectors)")
    matched: bool = Field(description="false when nothing passed on either arm: no hits, and nothing is evidence")
    floor: float | None = Field(description="the cosine a memory sharing no word with the query needed; null: none")
    below_floor: int = Field(description="candidates that shared no word with the query and sat below the floor")
    query_read: str = Field(description='"as given", or for a dialogue (speaker: text lines) the turns each arm read')
    database: str = Field(
        description='the database the search read: "primary", or a read replica\'s alias (its rows may lag the '
        "primary by seconds; your own writes are read on the primary for ATRIUM_READ_YOUR_WRITES_SECONDS)"
    )
    rewrite: Literal["off", "rewritten", "failed", "timeout"] = Field(description="query rewriting by a chat model")
    queries: list[str] = Field(description="the queries that ran, the one given first")
    rewrite_error: str = Field(description="why rewriting failed or timed out; empty otherwise")
    fallback: FallbackName = Field(description="the fallback this search ran with")
    fallback_from: Literal["request", "setting"] = Field(description="named in the request, or your setting")
    fallback_used: bool = Field(description="true when the fallback answered (an overview on a miss)")


class OverviewRoomsOut(Schema):
    palace: int
    kind: str
    rooms: int = Field(description="rooms of this kind")
    memories: int = Field(description="active memories in them")
    newest: list[str] = Field(description="the names of the newest rooms of this kind")


class OverviewEntryOut(Schema):
    label: Literal["overview"] = Field(description='always "overview": not found by the query, not evidence')
    why: Literal["recent", "reinforced"]
    coordinate: str | None
    memory: HitMemoryOut


class OverviewOut(Schema):
    label: Literal["overview"]
    rooms: list[OverviewRoomsOut]
    entries: list[OverviewEntryOut]


class SearchOut(Schema):
    mode: str
    degraded: list[str]
    common_words: list[str] = Field(
        description="query words (stemmed) too common to bring keyword matches on their own; they still count in "
        "the rank of memories found by the other words"
    )
    batch: str | None
    palaces: list[int]
    hits: list[HitOut]
    view: str = Field(description='"current", or the as-of view (as_of / known_at) the hits come from')
    as_of: datetime | None
    known_at: datetime | None
    time_zone_note: str | None = Field(
        default=None, description="which date arguments had no time zone, and the zone they were read in"
    )
    how: SearchHowOut = Field(description="how the search was made")
    overview: OverviewOut | None = Field(description="on a miss with fallback overview: what the palaces hold")


def _search(request: HttpRequest, params: SearchIn) -> dict[str, Any]:
    caller = caller_of(request)
    # A GET from a browser session writes nothing (any page could trigger it cross-site): no evidence batch, no
    # reinforcement. A bearer token is not sent by the browser on its own, so a token's GET keeps both, like POST.
    # Read tokens never reinforce (memory.search also spares palaces the user may only view).
    writes = request.method == "POST" or caller.token is not None
    if params.palace is not None and params.project is not None:
        raise InvalidInput("give palace or project, not both")
    palace_ids = None
    if params.palace is not None or params.project is not None:
        palace_ids = [palace_get(user=caller.user, palace_id=params.palace, origin=params.project).pk]
    fallback = search_fallback_choose(user=caller.user, asked=params.fallback)
    result = memory_search(
        user=caller.user,
        request=SearchRequest(
            query=params.query,
            palace_ids=palace_ids,
            kind=params.kind,
            room=params.room,
            status=None if params.status == "any" else params.status,
            as_of=params.as_of,
            known_at=params.known_at,
            limit=params.limit,
            fallback=fallback.for_search,
        ),
        token_id=caller.token.pk if caller.token is not None else None,
        reinforce=writes and caller.can_write,
        register_batch=writes,
    )
    return {**_out(result, fallback), "time_zone_note": zone_note(as_of=params.as_of, known_at=params.known_at)}


def _coordinate(m: Memory) -> str | None:
    return m.slot.coordinate if m.slot_id is not None and m.slot is not None else None


def _memory(m: Memory) -> dict[str, Any]:
    return {
        "id": m.pk,
        "palace": m.palace_id,
        "kind": m.kind,
        "content": m.content,
        "placard": m.placard,
        "status": m.status,
        "speaker": m.speaker,
        "confidence": m.confidence,
        "hit_count": m.hit_count,
        "occurred_at": m.occurred_at,
        "created_at": m.created_at,
        "source_session": m.source_session,
        "source_turn": m.source_turn,
    }


def _how(result: SearchResult, fallback: FallbackChoice) -> dict[str, Any]:
    return {
        "arms": result.arms,
        "matched": result.matched,
        "floor": result.floor,
        "below_floor": result.below_floor,
        "query_read": result.query_read,
        "database": result.database,
        "rewrite": result.rewrite,
        "queries": result.queries,
        "rewrite_error": result.rewrite_error,
        "fallback": result.fallback or NO_FALLBACK,  # what memory.search ran with, not what was asked
        "fallback_from": fallback.source,
        "fallback_used": result.overview is not None,
    }


def _overview(overview: Overview | None) -> dict[str, Any] | None:
    if overview is None:
        return None
    rooms = [
        {
            "palace": palace,
            "kind": k.kind,
            "rooms": k.rooms,
            "memories": k.memories,
            "newest": [r.name for r in k.newest],
        }
        for palace, kinds in overview.rooms.items()
        for k in kinds
    ]
    entries = [
        {"label": e.label, "why": e.why, "coordinate": _coordinate(e.memory), "memory": _memory(e.memory)}
        for e in overview.entries
    ]
    return {"label": overview.label, "rooms": rooms, "entries": entries}


def _out(result: SearchResult, fallback: FallbackChoice) -> dict[str, Any]:
    hits = [
        {
            "ref": hit.ref,
            "label": hit.label,
            "score": hit.score,
            "coordinate": _coordinate(hit.memory),
            "cues": hit.cues,
            "expanded_from": hit.expanded_from,
            "facts": [fact_dict(v) for v in hit.facts],
            "entities": [vars(t) for t in hit.entities],
            "memory": _memory(hit.memory),
        }
        for hit in result.hits
    ]
    return {
        "mode": result.mode,
        "degraded": result.degraded,
        "common_words": result.common_words,
        "batch": result.batch,
        "palaces": result.palace_ids,
        "hits": hits,
        "view": result.view,
        "as_of": result.as_of,
        "known_at": result.known_at,
        "how": _how(result, fallback),
        "overview": _overview(result.overview),
    }


@router.get("", response={200: SearchOut, **ERRORS})
def search_get(request: HttpRequest, params: Query[SearchIn]) -> dict[str, Any]:
    """Hybrid search over the palaces you may read (or the one named by `palace` / `project`). With a browser
    session a GET records nothing (`batch` is null); POST, or a bearer token, registers the evidence batch. `how`
    says how the search was made; on a miss, `fallback=overview` (or your setting) adds the labelled `overview`."""
    return _search(request, params)


@router.post("", response={200: SearchOut, **ERRORS})
def search_post(request: HttpRequest, params: SearchIn) -> dict[str, Any]:
    """The same search with the parameters in a JSON body (for long queries)."""
    return _search(request, params)
