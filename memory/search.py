"""Retrieval: the one search function behind every door (REST, MCP, panel, eval).

`memory_search` runs, in order:

1. Scope: the palaces the caller may read (palace.selectors.palaces_readable, nothing else), narrowed to
   `palace_ids` when given (an unreadable id answers NotFound, like one that does not exist); then the filters
   kind, room (the slot's room name), status (active by default) and `as_of` (occurred_at <= as_of).
2. Lexical arm: an OR tsquery over the query's lexemes (see memory.searchtext) against the GIN index on
   search_vector, ranked by ts_rank with the context section (label D) at 0.4. OR, not AND: a natural-language
   question rarely has all its words in the one memory that answers it.
3. Semantic arm: the embedding of the query *without the people it names* (the palace's speakers) against the
   HNSW cosine index, with pgvector's iterative index scan (`hnsw.iterative_scan = relaxed_order`) set for this
   statement's transaction only, so palace filters do not starve it. When the embedder is down the arm is skipped
   and named in `degraded`. Both arms run in one round trip, ARM_DEPTH candidates each.
4. Reciprocal rank fusion (k = 60) of the two rankings.
5. One hop over edges (next, supports, refines, related): every candidate passes EXPAND_SHARE (0.1) of its fused
   score to each neighbour; a neighbour neither arm found joins, labelled "edge:<kind> from #<id>".
6. Multiplicative boosts: recency (last access, else creation, decaying over ATRIUM_DECAY_WINDOW_DAYS) and proof
   (hit count), weights ATRIUM_RECENCY_WEIGHT and ATRIUM_PROOF_WEIGHT (0 disables either); and the speaker cue:
   when the query names exactly one known person, their memories get x(1 + SPEAKER_BOOST).
7. Cues (neighbouring slots of the same room) for the top hits, an evidence batch, and reinforcement: an
   AccessRecord per hit plus hit_count/last_accessed_at, in one statement. Retrievals are not mutations: no
   op-log rows.

The recipe (2, 3, 5, 6) was measured on LoCoMo dev (see `atrium eval`); names, dates and the previous turn go into
the full-text side, where they match exactly, and stay out of the embedding, where they swamp meaning.
Each arm is a single SQL statement; hits are fetched in one more; there is no per-hit query.
"""

from __future__ import annotations

import json
import math
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memory.embeddings import EmbedderUnavailable, embed_query
from memory.models import HALF_DISTANCE, Memory, vector_literal
from memory.search_people import known_people, people_named, without_names
from memory.searchtext import query_lexemes_sql, query_text
from palace.errors import InvalidInput, NotFound
from palace.models import Slot
from palace.selectors import palaces_readable

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

__all__ = ["Hit", "SearchResult", "memory_search"]

RRF_K = 60
ARM_DEPTH = 100  # candidates each arm contributes to the fusion
EXPAND_SHARE = 0.1  # what a candidate passes to its edge neighbours, as a share of its fused score
SPEAKER_BOOST = 0.2  # a question naming exactly one known person favours what that person said
EXPAND_KINDS = ("next", "supports", "refines", "related")
HNSW_EF_SEARCH = 100
CUE_HITS = 5
BATCH_KEEP = 20  # evidence batches kept per user
MAX_QUERY_CHARS = 2000
MAX_LIMIT = 100
# ts_rank weights for the labels {D, C, B, A}: context (D) counts 0.4 of the memory's own words (A) (measured).
TS_WEIGHTS = "{0.4, 0.2, 0.4, 1.0}"
# The lexical arm's work is bounded by the rows its candidate words hold (one heap visit and one ts_rank each,
# ~10 µs idle): measured at 100k memories, these keep it near 10 ms (see _lexical_plan).
LEX_COMMON_ROWS = 1_000  # a word estimated in more memories than this (table-wide) brings no candidates alone
LEX_SCAN_CAP = 2_000  # the lexical arm ranks at most this many matching rows
LEX_STOP_SHARE = 0.3  # a word in more than this share of the rows is never a candidate word
LEXEME_STATS_TTL = 300.0  # seconds a process trusts its copy of the word statistics


@dataclass
class Hit:
    memory: Memory
    score: float
    label: str
    ref: str = ""
    ranks: dict[str, int] = field(default_factory=dict)
    expanded_from: int | None = None
    cues: list[str] = field(default_factory=list)


@dataclass
class SearchResult:
    mode: str  # "hybrid" only when both arms ran; "lexical" / "semantic" when one did; "none" when none could
    degraded: list[str]
    hits: list[Hit]
    batch: str | None = None
    palace_ids: list[int] = field(default_factory=list)
    # Query words (as stemmed lexemes) too common to bring lexical candidates on their own: they still count in
    # the rank of memories found by the query's other words (see _lexical_plan).
    common_words: list[str] = field(default_factory=list)


@dataclass
class _Candidate:
    memory_id: int
    hit_count: int
    last_touched: datetime
    speaker: str = ""
    ranks: dict[str, int] = field(default_factory=dict)
    fused: float = 0.0
    expanded_from: int | None = None
    edge_kind: str = ""
    score: float = 0.0

    @property
    def label(self) -> str:
        if self.expanded_from is not None:
            return f"edge:{self.edge_kind} from #{self.expanded_from}"
        return " + ".join(f"{arm}#{self.ranks[arm]}" for arm in ("sem", "lex") if arm in self.ranks)


# --- scope and filters ---------------------------------------------------------------------------------------


def _scope(*, user: AbstractBaseUser | AnonymousUser | None, palace_ids: list[int] | None) -> list[int]:
    readable = set(palaces_readable(user=user).values_list("pk", flat=True))
    if palace_ids is None:
        return sorted(readable)
    wanted = {int(pid) for pid in palace_ids}
    if not wanted <= readable:
        raise NotFound("palace not found")
    return sorted(wanted)


def _validate(*, query: str, kind: str | None, status: str | None, limit: int) -> str:
    if not isinstance(query, str):
        raise InvalidInput("query must be text")
    query = query.replace("\x00", " ").strip()
    if not query:
        raise InvalidInput("query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"query is longer than {MAX_QUERY_CHARS} characters")
    if kind is not None and kind not in Memory.Kind.values:
        raise InvalidInput(f"kind must be one of {', '.join(Memory.Kind.values)}")
    if status is not None and status not in Memory.Status.values:
        raise InvalidInput(f"status must be one of {', '.join(Memory.Status.values)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}")
    return query


def _filter_sql(
    *,
    palaces: list[int],
    kind: str | None,
    room: str | None,
    status: str | None,
    as_of: datetime | None,
    palace_index: bool = True,
) -> tuple[str, list[Any]]:
    """WHERE conditions on `m` (memory_memory) and their parameters, shared by every statement.

    `palace_index=False` writes the palace condition as a plain row filter (`palace_id + 0`), for the lexical arm:
    otherwise the planner ANDs the full-text bitmap with a bitmap of every row of the palace, measured 10 ms at
    100k memories to save nothing, since the rare words the arm searches on bound the rows it visits anyway.
    """
    conds = ["m.palace_id = ANY(%s)" if palace_index else "(m.palace_id + 0) = ANY(%s)"]
    params: list[Any] = [palaces]
    if status is not None:
        conds.append("m.status = %s")
        params.append(status)
    if kind is not None:
        conds.append("m.kind = %s")
        params.append(kind)
    if as_of is not None:
        conds.append("m.occurred_at <= %s")
        params.append(as_of)
    if room is not None:
        conds.append(
            "m.slot_id IN (SELECT s.id FROM palace_slot s JOIN palace_room r ON r.id = s.room_id"
            " WHERE r.palace_id = ANY(%s) AND lower(r.name) = lower(%s))"
        )
        params.extend([palaces, room])
    return " AND ".join(conds), params


# --- arms ----------------------------------------------------------------------------------------------------

_COLUMNS = "m.id, m.hit_count, coalesce(m.last_accessed_at, m.created_at), m.speaker"


_Row = tuple[int, int, datetime, str]


# --- the lexical plan: which query words may bring candidates on their own -------------------------------------


@dataclass
class _LexemeStats:
    rows: float  # the table's row estimate (pg_class.reltuples)
    share: dict[str, float]  # lexeme -> share of rows holding it, for the lexemes ANALYZE found common
    unlisted: float  # the share assumed for a lexeme not in that list (half the least listed one, as the planner does)
    expires: float

    def estimate(self, lexeme: str) -> float:
        return self.rows * self.share.get(lexeme, self.unlisted)


_lexeme_stats_cache: list[_LexemeStats] = []


def _lexeme_stats() -> _LexemeStats:
    """How common each word is, from PostgreSQL's own statistics on search_vector (ANALYZE keeps up to 1,000
    most common lexemes with their frequencies, autovacuum keeps them current). Cached for LEXEME_STATS_TTL
    seconds per process; with no statistics yet every word counts as rare, which is exact, only slower."""
    if _lexeme_stats_cache and _lexeme_stats_cache[0].expires > time.monotonic():
        return _lexeme_stats_cache[0]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT greatest(c.reltuples, 0), s.most_common_elems::text::text[], s.most_common_elem_freqs"
            " FROM pg_class c LEFT JOIN pg_stats s ON s.schemaname = current_schema()"
            " AND s.tablename = 'memory_memory' AND s.attname = 'search_vector'"
            " WHERE c.oid = 'memory_memory'::regclass"
        )
        row = cursor.fetchone()
    rows, elems, freqs = (row or (0.0, None, None))[:3]
    elems, freqs = list(elems or []), [float(f) for f in (freqs or [])]
    share = dict(zip(elems, freqs[: len(elems)], strict=True))  # statistics follow the per-element shares
    unlisted = min(share.values()) / 2 if share else 0.0
    stats = _LexemeStats(float(rows or 0), share, unlisted, time.monotonic() + LEXEME_STATS_TTL)
    _lexeme_stats_cache[:] = [stats]
    return stats


@dataclass
class _LexicalPlan:
    lexemes: list[str]  # every query lexeme: they all count in the rank
    any_of: list[str]  # a memory holding any of these is a candidate
    all_of: list[str]  # ... and so is one holding all of these (two or more common words)
    common: list[str]  # lexemes too common to bring candidates on their own


def _lexical_plan(query: str) -> _LexicalPlan:
    """Which query words bring the lexical arm its candidates, from estimated row counts (table-wide).

    Ranking every memory that shares one common word with the query is what made the arm slow at 100k memories,
    and those matches carry little information (the measured BM25 recipe drops words in over 30 % of a palace).
    So a word in more than LEX_COMMON_ROWS rows is common, and the candidates are the memories holding any rare
    word (the most common of those become common too while their rows would pass LEX_SCAN_CAP), or all the common
    ones when that combination is itself rare (estimated as independent words). A query with no such seed searches
    on its least common word when that word is in at most LEX_SCAN_CAP rows, else the lexical arm finds nothing
    and the semantic arm answers. Words in over LEX_STOP_SHARE of the rows only ever count in the rank. Every query
    word counts in the rank; the words treated as common are reported with the result (`common_words`).
    """
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {query_lexemes_sql()}", [query_text(query)])
        row = cursor.fetchone()
    lexemes = sorted(str(x) for x in ((row[0] if row else None) or []))
    stats = _lexeme_stats()
    rows = {lx: stats.estimate(lx) for lx in lexemes}
    rare = sorted((lx for lx in lexemes if rows[lx] <= LEX_COMMON_ROWS), key=lambda lx: (rows[lx], lx))
    while len(rare) > 1 and sum(rows[lx] for lx in rare) > LEX_SCAN_CAP:
        rare.pop()
    common = [lx for lx in lexemes if lx not in rare]
    # Words in over LEX_STOP_SHARE of the rows are as good as stop words: they only count in the rank.
    usable = [lx for lx in common if rows[lx] <= LEX_STOP_SHARE * stats.rows]
    together = stats.rows * math.prod(rows[lx] / stats.rows for lx in usable) if stats.rows else 0.0
    all_of = usable if len(usable) > 1 and together <= LEX_COMMON_ROWS else []
    if not rare and not all_of and common:
        least = min(common, key=lambda lx: rows[lx])
        rare = [least] if rows[least] <= LEX_SCAN_CAP else []
    return _LexicalPlan(lexemes=lexemes, any_of=sorted(rare), all_of=all_of, common=common)


def _tsquery_sql(join: str) -> str:
    """SQL for a tsquery joining a text[] parameter of lexemes with `join` (NULL for an empty array)."""
    return f"(SELECT string_agg(quote_literal(x), '{join}')::tsquery FROM unnest(%s::text[]) AS x)"  # noqa: S608 - join is " | " or " & "


# The candidates' tsquery: (any_of OR'd) || (all_of AND'd), either side possibly NULL.
_SEEDS_SQL = (
    "(SELECT CASE WHEN a IS NULL THEN b WHEN b IS NULL THEN a ELSE a || b END"  # noqa: S608 - constants only
    f" FROM (SELECT {_tsquery_sql(' | ')} AS a, {_tsquery_sql(' & ')} AS b) AS seeds)"
)


def _arms(
    *, plan: _LexicalPlan, vector: Any | None, where: str, lexical_where: str, params: list[Any]
) -> dict[str, list[_Row]]:
    """Both arms in one round trip: a UNION ALL of the lexical and (when there is a vector) the semantic query.

    The lexical half ranks (ts_rank over every query lexeme) at most LEX_SCAN_CAP of the plan's candidates.
    The semantic half needs `hnsw.iterative_scan` and `hnsw.ef_search` for its transaction only: the settings go
    first in the same multi-statement string, which PostgreSQL runs as one (implicit) transaction.
    """
    lexical = (
        f"(SELECT 'lex' AS arm, {_COLUMNS},"  # noqa: S608 - constants and placeholders only
        f" ts_rank('{TS_WEIGHTS}'::float4[], m.search_vector, {_tsquery_sql(' | ')}) AS score"
        f" FROM (SELECT m.* FROM memory_memory m WHERE {lexical_where} AND m.search_vector @@ {_SEEDS_SQL}"
        "  LIMIT %s) AS m"
        " ORDER BY score DESC, m.id DESC LIMIT %s)"
    )
    args: list[Any] = [plan.lexemes, *params, plan.any_of, plan.all_of, LEX_SCAN_CAP, ARM_DEPTH]
    sql = lexical
    if vector is not None:
        literal = vector_literal(vector)
        sql = (
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"  # noqa: S608 - constants only
            f" set_config('hnsw.ef_search', '{HNSW_EF_SEARCH}', true);"
            f"{lexical} UNION ALL "
            f"(SELECT 'sem' AS arm, {_COLUMNS}, m.embedding <=> %s::vector AS score FROM memory_memory m"
            f" WHERE {where} AND m.embedding IS NOT NULL ORDER BY {HALF_DISTANCE} LIMIT %s)"
        )
        args += [literal, *params, literal, ARM_DEPTH]
    with connection.cursor() as cursor:
        cursor.execute(sql, args)
        if vector is not None:
            cursor.nextset()
        rows = cursor.fetchall()
    lex = sorted((r for r in rows if r[0] == "lex"), key=lambda r: (-r[5], -r[1]))
    # relaxed_order may return rows slightly out of distance order: sort by the distance here.
    sem = sorted((r for r in rows if r[0] == "sem"), key=lambda r: (r[5], -r[1]))
    arms: dict[str, list[_Row]] = {}
    if vector is not None:
        arms["sem"] = [(int(r[1]), int(r[2]), r[3], str(r[4])) for r in sem]
    arms["lex"] = [(int(r[1]), int(r[2]), r[3], str(r[4])) for r in lex]
    return arms


def _expand(*, parents: list[_Candidate], where: str, params: list[Any]) -> list[tuple[_Row, int, str]]:
    """Neighbours one edge away from `parents` that pass the same filters: (row, parent id, edge kind).

    Two statements, edges first, then their memories by id: each is linear in what it reads whatever the planner
    believes. As one join, a palace written faster than autovacuum analyses it (a bulk import, the eval) was planned
    as a nested loop over every memory of the palace: measured 900 ms for 550 memories, 5 ms once analysed.
    """
    ids = [c.memory_id for c in parents]
    kinds = list(EXPAND_KINDS)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT from_memory_id, to_memory_id, kind FROM memory_edge WHERE from_memory_id = ANY(%s)"
            " AND kind = ANY(%s) UNION ALL"
            " SELECT to_memory_id, from_memory_id, kind FROM memory_edge WHERE to_memory_id = ANY(%s)"
            " AND kind = ANY(%s)",
            [ids, kinds, ids, kinds],
        )
        edges = [(int(parent), int(other), str(kind)) for parent, other, kind in cursor.fetchall()]
        if not edges:
            return []
        cursor.execute(
            f"SELECT {_COLUMNS} FROM memory_memory m WHERE m.id = ANY(%s) AND {where}",  # noqa: S608 - constants
            [sorted({other for _, other, _ in edges}), *params],
        )
        rows = {int(r[0]): (int(r[0]), int(r[1]), r[2], str(r[3])) for r in cursor.fetchall()}
    return [(rows[other], parent, kind) for parent, other, kind in edges if other in rows]


# --- ranking -------------------------------------------------------------------------------------------------


def _boost(candidate: _Candidate, *, now: datetime) -> float:
    """(1 + w_r * recency) * (1 + w_p * proof): recency decays with days since last access, proof grows with hits."""
    factor = 1.0
    recency_weight = float(settings.ATRIUM_RECENCY_WEIGHT)
    window = int(settings.ATRIUM_DECAY_WINDOW_DAYS)
    if recency_weight > 0 and window > 0:
        age_days = max((now - candidate.last_touched).total_seconds() / 86400, 0.0)
        factor *= 1 + recency_weight * math.exp(-age_days / window)
    proof_weight = float(settings.ATRIUM_PROOF_WEIGHT)
    if proof_weight > 0 and candidate.hit_count > 0:
        factor *= 1 + proof_weight * min(1.0, math.log1p(candidate.hit_count) / math.log1p(50))
    return factor


def _fuse(arms: dict[str, list[_Row]]) -> dict[int, _Candidate]:
    pool: dict[int, _Candidate] = {}
    for arm, rows in arms.items():
        for rank, (memory_id, hit_count, touched, speaker) in enumerate(rows, start=1):
            candidate = pool.setdefault(memory_id, _Candidate(memory_id, hit_count, touched, speaker))
            candidate.ranks[arm] = rank
            candidate.fused += 1.0 / (RRF_K + rank)
    return pool


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
    FROM unnest(%(ids)s::bigint[]) WITH ORDINALITY AS hit(memory_id, rank) WHERE %(reinforce)s
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
    palaces: list[int],
    token_id: int | None,
    register: bool,
    reinforce: bool,
    now: datetime,
) -> str | None:
    """The evidence batch (newest BATCH_KEEP per user) and the reinforcement (AccessRecord rows, hit_count and
    last_accessed_at), in one statement. Retrievals are not mutations: nothing goes to the op log."""
    user_id = user.pk if user is not None and user.is_authenticated else None
    register = register and user_id is not None
    handle = "b_" + secrets.token_urlsafe(12) if register else None
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
                "ids": [hit.memory.pk for hit in hits],
                "reinforce": reinforce,
            },
        )
    if reinforce:
        for hit in hits:
            hit.memory.hit_count += 1
            hit.memory.last_accessed_at = now
    return handle


def _hop(pool: dict[int, _Candidate], edges: list[tuple[_Row, int, str]]) -> None:
    """One hop over edges: every candidate passes EXPAND_SHARE of its fused score to each neighbour (the best
    parent counts); a neighbour no arm found joins the pool, labelled by the edge that brought it."""
    before = {memory_id: c.fused for memory_id, c in pool.items()}
    best: dict[int, tuple[float, int, str, _Row]] = {}
    for row, parent_id, edge_kind in edges:
        share = EXPAND_SHARE * before[parent_id]
        if row[0] not in best or share > best[row[0]][0]:
            best[row[0]] = (share, parent_id, edge_kind, row)
    for memory_id, (share, parent_id, edge_kind, row) in best.items():
        existing = pool.get(memory_id)
        if existing is not None:
            existing.fused = before[memory_id] + share
        else:
            pool[memory_id] = _Candidate(
                memory_id, row[1], row[2], row[3], fused=share, expanded_from=parent_id, edge_kind=edge_kind
            )


# --- the function ----------------------------------------------------------------------------------------------


def memory_search(
    *,
    user: AbstractBaseUser | AnonymousUser | None,
    query: str,
    palace_ids: list[int] | None = None,
    kind: str | None = None,
    room: str | None = None,
    status: str | None = Memory.Status.ACTIVE,
    as_of: datetime | None = None,
    limit: int = 10,
    token_id: int | None = None,
    reinforce: bool = True,
    register_batch: bool = True,
    now: datetime | None = None,
) -> SearchResult:
    """Find the memories that answer `query` in the palaces `user` may read. See the module docstring."""
    query = _validate(query=query, kind=kind, status=status, limit=limit)
    now = now or timezone.now()
    palaces = _scope(user=user, palace_ids=palace_ids)
    if not palaces:
        return SearchResult(mode="none", degraded=[], hits=[], batch=None, palace_ids=[])
    where, params = _filter_sql(palaces=palaces, kind=kind, room=room, status=status, as_of=as_of)

    named = people_named(query, known_people(palaces))
    degraded: list[str] = []
    vector = None
    try:
        vector = embed_query(without_names(query, named))
    except EmbedderUnavailable:
        degraded.append("semantic")
    plan = _lexical_plan(query)
    # The same conditions and parameters, with the palace as a row filter (see _filter_sql).
    lexical_where, _ = _filter_sql(
        palaces=palaces, kind=kind, room=room, status=status, as_of=as_of, palace_index=False
    )
    arms = _arms(plan=plan, vector=vector, where=where, lexical_where=lexical_where, params=params)
    mode = "hybrid" if len(arms) == 2 else ("lexical" if "lex" in arms else "semantic")

    pool = _fuse(arms)
    if pool:
        _hop(pool, _expand(parents=list(pool.values()), where=where, params=params))
    for candidate in pool.values():
        candidate.score = candidate.fused * _boost(candidate, now=now)
        if len(named) == 1 and candidate.speaker == named[0]:
            candidate.score *= 1 + SPEAKER_BOOST
    ranked = sorted(pool.values(), key=lambda c: (-c.score, -c.memory_id))[:limit]

    # Neither derived column is shown: the embedding lives out of line (TOAST), 10 extra fetches and parses.
    rows = Memory.objects.defer("search_vector", "embedding").select_related("slot__room")
    by_id = rows.in_bulk([c.memory_id for c in ranked])
    hits = [
        Hit(
            memory=by_id[c.memory_id],
            score=round(c.score, 6),
            label=c.label,
            ref=f"r{i}",
            ranks=dict(c.ranks),
            expanded_from=c.expanded_from,
        )
        for i, c in enumerate(ranked, start=1)
        if c.memory_id in by_id
    ]
    _cues(hits)
    batch = None
    if hits and (register_batch or reinforce):
        batch = _record(
            user=user,
            query=query,
            hits=hits,
            palaces=palaces,
            token_id=token_id,
            register=register_batch,
            reinforce=reinforce,
            now=now,
        )
    return SearchResult(
        mode=mode, degraded=degraded, hits=hits, batch=batch, palace_ids=palaces, common_words=plan.common
    )
