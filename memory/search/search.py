"""Retrieval: the one search function behind every door (REST, MCP, panel, eval).

`memory_search` runs, in order:

1. Scope: the palaces the caller may read (palace.selectors.palaces_readable, nothing else), narrowed to
   `palace_ids` when given (an unreadable id answers NotFound, like one that does not exist); then the filters
   kind, room (the slot's room name), status (active by default); `as_of` (world time) and `known_at` (record
   time) make it a view of the palace as it stood then (memory.search.arms.filter_sql): the version of each memory
   current then, memories forgotten or corrected since as they were, nothing that had not happened or been
   recorded yet. Hits then carry the facts of their linked entities as of that point (memory.knowledge.facts).
2. The query vector: the embedding of the query *without the people it names* (memory.knowledge.people), started
   on a worker thread so that it is computed while PostgreSQL runs the full-text arm.
3. Lexical arm (memory.search.arms): an OR tsquery over the query's lexemes (memory.text.searchtext) against the GIN
   index, ranked by ts_rank with the context section (label D) at 0.4; common words bring no candidates alone.
4. Semantic arm: the vector against the HNSW cosine index (iterative scan, so palace filters do not starve it),
   in one statement with the cosine of the lexical candidates. When the embedder is down the arm is skipped and
   named in `degraded`.
5. Ranking (memory.search.rank): the similarity floor (a candidate sharing no word with the query and below the
   embedder's floor is not a hit), score-aware fusion, one hop over edges, episode context, the speaker cue, the
   entity cue (memory.knowledge.extraction.entity_cues: one indexed statement), the recency and proof boosts. A search
   where nothing passes says so: `matched` is False and there are no hits.
6. Cues (neighbouring slots of the same room) for the top hits, the entity tags of every hit (one query), an
   evidence batch, and reinforcement: an
   AccessRecord per hit plus hit_count/last_accessed_at, in one statement. Retrievals are not mutations: no
   op-log rows. Reinforcement is shared ranking state, so it counts only hits in palaces the user may write
   (owner or editor): a viewer's searches leave a project palace as they found it. Doors pass
   `reinforce=False` for read tokens and for any search that must not write (a GET from a browser session).

On a miss, `fallback="overview"` adds an overview of the palaces (memory.search.overview) labelled as such, never
as hits. With a chat model configured and rewriting on, the query is first rewritten into up to three
complementary queries that are retrieved and fused (memory.search.rewrite); the result says what happened.
The recipe was measured on LoCoMo dev (see `atrium eval` and the README).
"""

from __future__ import annotations

import json
import secrets
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db import connection
from django.utils import timezone

from memory.knowledge import (
    entities_for_memories,
    entity_cues,
    facts_for_memories,
    known_people,
    people_named,
    speakers,
    without_names,
)
from memory.models import Memory
from memory.providers import EmbedderUnavailable, embed_query_soon, embedder_model_name
from memory.search.arms import (
    common_in_scope,
    expand,
    filter_sql,
    lexical_arm,
    lexical_plan,
    reading_from,
    semantic_arm,
)
from memory.search.overview import palace_overview
from memory.search.rank import Candidate, apply_floor, floor_for, pool, rank
from memory.search.results import Hit, Retrieved, SearchRequest, SearchResult
from memory.search.rewrite import retrieve_rewritten
from memory.search.views import query_views
from palace.errors import NotFound
from palace.models import Slot
from palace.selectors import palace_ids_readable, palaces_writable
from palace.structure import room_name_resolve

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

CUE_HITS = 5
BATCH_KEEP = 20  # evidence batches kept per user


# --- scope and filters ---------------------------------------------------------------------------------------


def _scope(*, user: AbstractBaseUser | AnonymousUser | None, palace_ids: list[int] | None) -> list[int]:
    readable = set(palace_ids_readable(user=user))
    if palace_ids is None:
        return sorted(readable)
    wanted = {int(pid) for pid in palace_ids}
    if not wanted <= readable:
        raise NotFound("palace not found")
    return sorted(wanted)


# --- retrieval of one query -------------------------------------------------------------------------------------


def _retrieve(
    *,
    query: str,
    palaces: list[int],
    kind: str | None,
    room: str | None,
    status: str | None,
    as_of: datetime | None,
    now: datetime,
    known_at: datetime | None = None,
) -> Retrieved:
    """Steps 2-5 of the module docstring for one query."""
    where, params = filter_sql(palaces=palaces, kind=kind, room=room, status=status, as_of=as_of, known_at=known_at)
    # The same conditions and parameters, with the palace as a row filter (see filter_sql).
    lexical_where, _ = filter_sql(
        palaces=palaces, kind=kind, room=room, status=status, as_of=as_of, known_at=known_at, palace_index=False
    )
    named = people_named(query, known_people(palaces))
    views = query_views(query)
    vectors_soon = [(embed_query_soon(without_names(text, named)), weight) for text, weight in views.semantic]
    cued = [name for name in named if name in speakers(palaces)]
    plan = lexical_plan(views.lexical)
    arms = {"lex": lexical_arm(plan=plan, lexical_where=lexical_where, params=params)}
    common = common_in_scope(plan=plan, palaces=palaces)  # like the lexical arm, while the query embeds
    degraded: list[str] = []
    cosines: dict[int, float] = {}
    try:
        vector = _mixed([(soon.result(), weight) for soon, weight in vectors_soon])
    except EmbedderUnavailable:
        degraded.append("semantic")
        vector = None
    if vector is not None:
        arms["sem"], cosines = semantic_arm(
            plan=plan, vector=vector, where=where, params=params, also=[r.id for r in arms["lex"]]
        )
    found = pool(arms, cosines)
    background = [r.cosine for r in arms.get("sem", []) if r.cosine is not None]
    floor = floor_for(embedder_model_name(), background=background) if vector is not None else None
    below = apply_floor(found, floor)
    matched = bool(found)
    edges = expand(parents=list(found), vector=vector, where=where, params=params) if found else []
    candidates = [*found, *(row.id for row, _, _ in edges)]
    linked = entity_cues(palaces=palaces, query=query, memory_ids=candidates) if found else {}
    return Retrieved(
        ranked=rank(found, edges=edges, named=cued, now=now, entity_linked=frozenset(linked), dialogue=views.turns > 0),
        mode="hybrid" if vector is not None else "lexical",
        degraded=degraded,
        common=common,
        matched=matched,
        floor=floor,
        below_floor=below,
        query_read=views.described(),
    )


def _mixed(vectors: list[tuple[Any, float]]) -> Any:
    """One query vector from the views' (memory.search.views): their weighted sum, unit length again, so its cosine
    with a memory is the weighted mean of the views' cosines (scaled)."""
    if len(vectors) == 1:
        return vectors[0][0]
    total = sum(np.asarray(v, dtype=np.float32) * w for v, w in vectors)
    return total / max(float(np.linalg.norm(total)), 1e-12)


def _hits(ranked: list[Candidate]) -> list[Hit]:
    # Neither derived column is shown: the embedding lives out of line (TOAST), 10 extra fetches and parses.
    rows = Memory.objects.defer("search_vector", "embedding").select_related("slot__room")
    by_id = rows.in_bulk([c.memory_id for c in ranked])
    hits = [
        Hit(
            memory=by_id[c.memory_id],
            score=round(c.score, 6),
            label=c.label,
            ranks=dict(c.ranks),
            expanded_from=c.expanded_from,
        )
        for c in ranked
        if c.memory_id in by_id
    ]
    for i, hit in enumerate(hits, start=1):
        hit.ref = f"r{i}"
    return hits


def _facts(hits: list[Hit], *, as_of: datetime | None, known_at: datetime | None, now: datetime) -> None:
    """The facts of each hit's linked entities at the search's point in time (one query when none are linked)."""
    if not hits:
        return
    found = facts_for_memories(memory_ids=[h.memory.pk for h in hits], as_of=as_of, known_at=known_at, now=now)
    for hit in hits:
        hit.facts = found.get(hit.memory.pk, [])


# --- cues, evidence batch, reinforcement -------------------------------------------------------------------


def _cues(hits: list[Hit]) -> None:
    """Neighbouring slot coordinates (same room, number ± 1) for the top hits, in one query."""
    wanted: dict[tuple[int, int], Hit] = {}
    for hit in hits[:CUE_HITS]:
        slot = hit.memory.slot
        if slot is not None:
            wanted[(slot.room_id, slot.number)] = hit
    if not wanted:
        return
    rooms = {room for room, _ in wanted}
    numbers = {n + d for _, n in wanted for d in (-1, 1)}
    neighbours = Slot.objects.filter(room_id__in=rooms, number__in=numbers).select_related("room")
    by_place = {(s.room_id, s.number): s.coordinate for s in neighbours}
    for (room_id, number), hit in wanted.items():
        hit.cues = [by_place[(room_id, n)] for n in (number - 1, number + 1) if (room_id, n) in by_place]


_RECORD_SQL = f"""
WITH batch AS (
    INSERT INTO memory_searchbatch (handle, user_id, query, refs, palace_ids, created_at, assessed)
    SELECT %(handle)s, %(user)s, %(query)s, %(refs)s::jsonb, %(palaces)s::jsonb, %(now)s, false WHERE %(register)s
), stale AS (
    -- The statement's snapshot does not see the batch inserted above: keep the newest {BATCH_KEEP - 1} others.
    DELETE FROM memory_searchbatch WHERE %(register)s AND id IN (
        SELECT id FROM memory_searchbatch WHERE user_id = %(user)s
        ORDER BY created_at DESC, id DESC OFFSET {BATCH_KEEP - 1})
), access AS (
    INSERT INTO memory_accessrecord (memory_id, user_id, token_id, batch, rank, via, created_at)
    SELECT hit.memory_id, %(user)s, %(token)s, %(batch)s, hit.rank, 'search', %(now)s
    FROM unnest(%(ids)s::bigint[], %(ranks)s::int[]) AS hit(memory_id, rank) WHERE %(reinforce)s
), bump AS (
    UPDATE memory_memory SET hit_count = hit_count + 1, last_accessed_at = %(now)s
    WHERE id = ANY(%(ids)s::bigint[]) AND %(reinforce)s
)
SELECT 1
"""  # noqa: S608 - a constant and named placeholders


def _record(
    *,
    user: Any,
    query: str,
    hits: list[Hit],
    reinforced: list[Hit],
    palaces: list[int],
    token_id: int | None,
    register: bool,
    reinforce: bool,
    now: datetime,
) -> str | None:
    """The evidence batch (newest BATCH_KEEP per user, of all `hits`) and the reinforcement of the `reinforced`
    hits (AccessRecord rows, hit_count and last_accessed_at), in one statement. Retrievals are not mutations:
    nothing goes to the op log."""
    user_id = user.pk if user is not None and user.is_authenticated else None
    register = register and user_id is not None
    handle = "b_" + secrets.token_urlsafe(12) if register else None
    chosen = {id(hit) for hit in reinforced}
    ranked = [(rank, hit) for rank, hit in enumerate(hits, start=1) if id(hit) in chosen]
    with connection.cursor() as cursor:
        cursor.execute(
            _RECORD_SQL,
            {
                "handle": handle,
                "user": user_id,
                "query": query,
                "refs": json.dumps({hit.ref: hit.memory.pk for hit in hits}),
                "palaces": json.dumps(palaces),
                "now": now,
                "register": register,
                "token": token_id,
                "batch": handle or "",
                "ids": [hit.memory.pk for _, hit in ranked],
                "ranks": [rank for rank, _ in ranked],
                "reinforce": reinforce,
            },
        )
    if reinforce:
        for hit in reinforced:
            hit.memory.hit_count += 1
            hit.memory.last_accessed_at = now
    return handle


# --- the function ----------------------------------------------------------------------------------------------


def memory_search(
    *,
    user: AbstractBaseUser | AnonymousUser | None,
    request: SearchRequest,
    token_id: int | None = None,
    reinforce: bool = True,
    register_batch: bool = True,
    now: datetime | None = None,
) -> SearchResult:
    """Find the memories that answer `request` in the palaces `user` may read. See the module docstring.

    `token_id` is the token the caller came through (recorded on the access records); `reinforce=False` leaves
    hit counts and access records alone (read tokens, GETs from a browser session); `register_batch=False` mints
    no evidence batch.
    """
    query, kind, room, status = request.query, request.kind, request.room, request.status
    as_of, known_at, limit = request.as_of, request.known_at, request.limit
    now = now or timezone.now()
    palaces = _scope(user=user, palace_ids=request.palace_ids)
    if not palaces:
        return SearchResult(mode="none", degraded=[], hits=[], batch=None, palace_ids=[], fallback=request.fallback)
    if room:  # the panel shows translated room names (事实厅): accept those, refuse an unknown room by name
        room = room_name_resolve(palace_ids=palaces, name=room)

    def retrieve(text: str) -> Retrieved:
        return _retrieve(
            query=text, palaces=palaces, kind=kind, room=room, status=status, as_of=as_of, known_at=known_at, now=now
        )

    database = reading_from()  # before the arms run: where they read (config/dbrouter.py)
    rewritten = retrieve_rewritten(query=query, enabled=request.rewrite, retrieve=retrieve)
    found = rewritten.retrieved
    hits = _hits(found.ranked[:limit])
    _cues(hits)
    _facts(hits, as_of=as_of, known_at=known_at, now=now)
    tags = entities_for_memories(hit.memory.pk for hit in hits)
    for hit in hits:
        hit.entities = tags.get(hit.memory.pk, [])
    batch = None
    reinforced: list[Hit] = []
    if reinforce and hits:
        writable = set(palaces_writable(user=user).filter(pk__in=palaces).values_list("pk", flat=True))
        reinforced = [hit for hit in hits if hit.memory.palace_id in writable]
        reinforce = bool(reinforced)
    if hits and (register_batch or reinforce):
        batch = _record(
            user=user,
            query=query,
            hits=hits,
            reinforced=reinforced,
            palaces=palaces,
            token_id=token_id,
            register=register_batch,
            reinforce=reinforce,
            now=now,
        )
    result = SearchResult(
        mode=found.mode,
        degraded=found.degraded,
        hits=hits,
        batch=batch,
        palace_ids=palaces,
        common_words=found.common,
        matched=found.matched,
        floor=found.floor,
        below_floor=found.below_floor,
        query_read=found.query_read,
        database=database,
        rewrite=rewritten.status,
        queries=rewritten.queries,
        rewrite_error=rewritten.error,
        as_of=as_of,
        known_at=known_at,
        fallback=request.fallback,
    )
    if not result.matched and request.fallback == "overview":
        result.overview = palace_overview(palaces=palaces, now=now)
    return result
