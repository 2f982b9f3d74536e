"""Retrieval: the one search function behind every door (REST, MCP, panel, eval).

`memory_search` runs, in order:

1. Scope: the palaces the caller may read (palace.selectors.palaces_readable, nothing else), narrowed to
   `palace_ids` when given (an unreadable id answers NotFound, like one that does not exist); then the filters
   kind, room (the slot's room name), status (active by default) and `as_of` (occurred_at <= as_of).
2. Lexical arm: an OR tsquery over the query's lexemes (see memory.searchtext) against the GIN index on
   search_vector, ranked by ts_rank. OR, not AND: a natural-language question rarely has all its words in the one
   memory that answers it.
3. Semantic arm: the query embedding against the HNSW cosine index, with pgvector's iterative index scan
   (`hnsw.iterative_scan = relaxed_order`) set for this transaction only, so palace filters do not starve it.
   When the embedder is down the arm is skipped and named in `degraded`.
4. Reciprocal rank fusion (k = 60) of the two rankings.
5. One hop over edges (next, supports, refines, related) from the best fused hits: a neighbour not found by
   either arm joins with a share of its parent's score, labelled "edge:<kind> from #<id>".
6. Multiplicative boosts: recency (last access, else creation, decaying over ATRIUM_DECAY_WINDOW_DAYS) and proof
   (hit count), weights ATRIUM_RECENCY_WEIGHT and ATRIUM_PROOF_WEIGHT; 0 disables either.
7. Cues (neighbouring slots of the same room) for the top hits, an evidence batch, and reinforcement: an
   AccessRecord per hit plus hit_count/last_accessed_at. Retrievals are not mutations: no op-log rows.

Each arm is a single SQL statement; hits are fetched in one more; there is no per-hit query.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from memory.embeddings import EmbedderUnavailable, embed_query
from memory.models import AccessRecord, Memory, SearchBatch
from memory.searchtext import query_lexemes_sql, query_text
from palace.errors import InvalidInput, NotFound
from palace.models import Slot
from palace.selectors import palaces_readable

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

__all__ = ["Hit", "SearchResult", "memory_search"]

RRF_K = 60
ARM_DEPTH = 50  # candidates each arm contributes to the fusion
EXPAND_FROM = 10  # the best fused hits whose edges are followed
EXPAND_SHARE = 0.5  # a neighbour's score as a share of its parent's
EXPAND_KINDS = ("next", "supports", "refines", "related")
HNSW_EF_SEARCH = 100
CUE_HITS = 5
BATCH_KEEP = 20  # evidence batches kept per user
MAX_QUERY_CHARS = 2000
MAX_LIMIT = 100
# ts_rank weights for the labels {D, C, B, A}: context (D) counts a third of the memory's own words (A).
TS_WEIGHTS = "{0.3, 0.2, 0.4, 1.0}"


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


@dataclass
class _Candidate:
    memory_id: int
    hit_count: int
    last_touched: datetime
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
    *, palaces: list[int], kind: str | None, room: str | None, status: str | None, as_of: datetime | None
) -> tuple[str, list[Any]]:
    """WHERE conditions on `m` (memory_memory) and their parameters, shared by every statement."""
    conds = ["m.palace_id = ANY(%s)"]
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

_COLUMNS = "m.id, m.hit_count, coalesce(m.last_accessed_at, m.created_at)"


def _lexical(*, query: str, where: str, params: list[Any]) -> list[tuple[int, int, datetime]]:
    sql = (
        f"SELECT {_COLUMNS} FROM memory_memory m, {query_lexemes_sql()} AS q(q)"  # noqa: S608 - constants only
        f" WHERE {where} AND m.search_vector @@ q.q"
        f" ORDER BY ts_rank('{TS_WEIGHTS}'::float4[], m.search_vector, q.q) DESC, m.id DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [query_text(query), *params, ARM_DEPTH])
        return [(int(r[0]), int(r[1]), r[2]) for r in cursor.fetchall()]


def _semantic(*, vector: Any, where: str, params: list[Any]) -> list[tuple[int, int, datetime]]:
    # relaxed_order may return rows slightly out of distance order: fetch the distance and sort here.
    sql = (
        f"SELECT {_COLUMNS}, m.embedding <=> %s::vector AS distance FROM memory_memory m"  # noqa: S608
        f" WHERE {where} AND m.embedding IS NOT NULL ORDER BY m.embedding <=> %s::vector LIMIT %s"
    )
    literal = "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %s, true)",
            [str(HNSW_EF_SEARCH)],
        )
        cursor.execute(sql, [literal, *params, literal, ARM_DEPTH])
        rows = cursor.fetchall()
    rows.sort(key=lambda r: (r[3], -r[0]))
    return [(int(r[0]), int(r[1]), r[2]) for r in rows]


def _expand(*, parents: list[_Candidate], where: str, params: list[Any]) -> list[tuple[int, int, datetime, int, str]]:
    """Neighbours one edge away from `parents` that pass the same filters: (id, hits, touched, parent, kind)."""
    ids = [c.memory_id for c in parents]
    sql = (
        f"SELECT {_COLUMNS}, e.parent, e.kind FROM ("  # noqa: S608 - constants and placeholders only
        "  SELECT from_memory_id AS parent, to_memory_id AS other, kind FROM memory_edge"
        "   WHERE from_memory_id = ANY(%s) AND kind = ANY(%s)"
        "  UNION ALL"
        "  SELECT to_memory_id, from_memory_id, kind FROM memory_edge"
        "   WHERE to_memory_id = ANY(%s) AND kind = ANY(%s)"
        f") AS e JOIN memory_memory m ON m.id = e.other WHERE {where}"
    )
    kinds = list(EXPAND_KINDS)
    with connection.cursor() as cursor:
        cursor.execute(sql, [ids, kinds, ids, kinds, *params])
        return [(int(r[0]), int(r[1]), r[2], int(r[3]), str(r[4])) for r in cursor.fetchall()]


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


def _fuse(arms: dict[str, list[tuple[int, int, datetime]]]) -> dict[int, _Candidate]:
    pool: dict[int, _Candidate] = {}
    for arm, rows in arms.items():
        for rank, (memory_id, hit_count, touched) in enumerate(rows, start=1):
            candidate = pool.setdefault(memory_id, _Candidate(memory_id, hit_count, touched))
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


def _register_batch(*, user: Any, query: str, hits: list[Hit], palaces: list[int]) -> str:
    handle = "b_" + secrets.token_urlsafe(12)
    SearchBatch.objects.create(
        handle=handle,
        user=user,
        query=query,
        refs={hit.ref: hit.memory.pk for hit in hits},
        palace_ids=palaces,
    )
    stale = SearchBatch.objects.filter(user=user).order_by("-created_at", "-pk").values_list("pk", flat=True)
    SearchBatch.objects.filter(pk__in=list(stale[BATCH_KEEP:])).delete()
    return handle


def _reinforce(*, user: Any, token_id: int | None, hits: list[Hit], batch: str | None, now: datetime) -> None:
    user_id = user.pk if user is not None and user.is_authenticated else None
    AccessRecord.objects.bulk_create(
        [
            AccessRecord(
                memory_id=h.memory.pk, user_id=user_id, token_id=token_id, batch=batch or "", rank=i, via="search"
            )
            for i, h in enumerate(hits, start=1)
        ]
    )
    Memory.objects.filter(pk__in=[h.memory.pk for h in hits]).update(hit_count=F("hit_count") + 1, last_accessed_at=now)
    for hit in hits:
        hit.memory.hit_count += 1
        hit.memory.last_accessed_at = now


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

    arms: dict[str, list[tuple[int, int, datetime]]] = {}
    degraded: list[str] = []
    try:
        vector = embed_query(query)
    except EmbedderUnavailable:
        degraded.append("semantic")
    else:
        arms["sem"] = _semantic(vector=vector, where=where, params=params)
    arms["lex"] = _lexical(query=query, where=where, params=params)
    mode = "hybrid" if len(arms) == 2 else ("lexical" if "lex" in arms else "semantic")

    pool = _fuse(arms)
    parents = sorted(pool.values(), key=lambda c: (-c.fused, -c.memory_id))[:EXPAND_FROM]
    if parents:
        for memory_id, hit_count, touched, parent_id, edge_kind in _expand(parents=parents, where=where, params=params):
            share = EXPAND_SHARE * pool[parent_id].fused
            existing = pool.get(memory_id)
            if existing is None:
                pool[memory_id] = _Candidate(
                    memory_id, hit_count, touched, fused=share, expanded_from=parent_id, edge_kind=edge_kind
                )
            elif existing.expanded_from is not None and share > existing.fused:
                existing.fused, existing.expanded_from, existing.edge_kind = share, parent_id, edge_kind
    for candidate in pool.values():
        candidate.score = candidate.fused * _boost(candidate, now=now)
    ranked = sorted(pool.values(), key=lambda c: (-c.score, -c.memory_id))[:limit]

    rows = Memory.objects.defer("search_vector").select_related("slot__room")
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
        with transaction.atomic():
            if register_batch and user is not None and user.is_authenticated:
                batch = _register_batch(user=user, query=query, hits=hits, palaces=palaces)
            if reinforce:
                _reinforce(user=user, token_id=token_id, hits=hits, batch=batch, now=now)
    return SearchResult(mode=mode, degraded=degraded, hits=hits, batch=batch, palace_ids=palaces)
