"""Bench palaces and their bulk load (ops.bench.search, and the eval's background palaces).

Users and palaces are created directly (a measurement is not a domain event, so no op-log rows), which is what lets
the bench delete them at the end. Rows go in as a bulk load should:

1. COPY in binary, chunk by chunk with a progress line, into a temporary table of the six columns that vary (row-level
   security refuses COPY into memory_memory itself), then INSERT … SELECT with the constant columns (the policies
   check it; the load acts as the system; the trigger derives search_vector). Vectors travel as pgvector's binary
   form (pgvector's own psycopg dumper, registered on the COPY cursor only): formatting 384 floats as text was
   most of the Python time of a row.
2. For loads of REBUILD_AT rows or more, the HNSW and full-text (GIN) indexes are dropped meanwhile and autovacuum
   is off for the table; in a `finally`, each index is rebuilt with its exact original definition and autovacuum
   is set back. The build gets `maintenance_work_mem` (the HNSW graph must fit in it, or pgvector builds it on
   disk, several times slower) and parallel maintenance workers, for this session only.
3. VACUUM (ANALYZE), as autovacuum would do soon after: the measurement is the steady state (hint bits and the
   visibility map set), not autovacuum's first pass over the new rows in the middle of it.

Run the bench on a database that is not serving traffic.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection

from memory.search import word_statistics_clear
from memory.text import build_search_text
from ops.bench.synthetic import CENTRES, KINDS, TextMaker, VectorMaker
from palace.models import Membership, Palace

REBUILD_AT = 20_000
CHUNK = 20_000
PROGRESS_EVERY = 100_000  # rows between two progress lines
DROPPED = ("memory_embedding_hnsw", "memory_search_gin")
BUILD_MEMORY_CAP_MB = 4096

_TEMP = "bench_load"
_TEMP_COLUMNS = "palace_id, kind, content, occurred_at, search_text, embedding"
_INSERT = (
    "INSERT INTO memory_memory (palace_id, kind, content, placard, status, confidence, importance, hit_count,"  # noqa: S608
    " occurred_at, created_at, updated_at, version, source_kind, source_session, source_turn, sources, speaker,"
    " redactions, epitaph, search_text, embedding, embedding_model, meta, review_enrolled)"
    " SELECT palace_id, kind, content, '', 'active', 0.7, 0.5, 0, occurred_at, %s, %s, 1, 'import', '', '',"
    f" '[]'::jsonb, '', '[]'::jsonb, '', search_text, embedding, 'bench', '{{}}'::jsonb, false FROM {_TEMP}"
)


def make_owner(name: str) -> tuple[Any, Palace]:
    user = get_user_model().objects.create(username=name)
    palace = Palace.objects.create(kind=Palace.Kind.PERSONAL, name=f"{name}'s palace", personal_owner=user)
    Membership.objects.create(palace=palace, user=user, role=Membership.Role.OWNER)
    return user, palace


def split(total: int, parts: int) -> list[int]:
    """`total` rows over `parts` palaces, as evenly as whole rows allow."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


@dataclass
class LoadReport:
    rows: int
    load_seconds: float  # COPY and INSERT … SELECT (the dropped indexes absent)
    vacuum_seconds: float
    index_build_seconds: dict[str, float] = field(default_factory=dict)  # per rebuilt index
    maintenance: str = "ANALYZE"
    build_settings: dict[str, str] = field(default_factory=dict)

    @property
    def rows_per_second(self) -> float:
        return round(self.rows / self.load_seconds, 1) if self.load_seconds > 0 else -1.0


# Where a palace's rows come from: `size` texts and their vectors a call (synthetic, or ops.bench.corpus).
Source = Callable[[int, np.random.Generator], tuple[list[str], np.ndarray]]


def synthetic_source(maker: TextMaker, vectors: VectorMaker) -> Source:
    return lambda size, rng: (maker.notes(size), vectors(count=size, rng=rng))


def _copy_chunk(*, palace_id: int, size: int, source: Source, rng: np.random.Generator) -> None:
    from pgvector.psycopg.vector import register_vector_info
    from psycopg.types import TypeInfo

    now = datetime.now(UTC)
    minutes = rng.integers(0, 60 * 24 * 365, size=size)
    texts, rows = source(size, rng)
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {_TEMP} (palace_id bigint, kind text, content text,"
            " occurred_at timestamptz, search_text text, embedding vector)"
        )
        raw = cursor.cursor  # the psycopg cursor: the vector dumper is registered on it alone
        register_vector_info(raw, TypeInfo.fetch(raw.connection, "vector"))
        with raw.copy(f"COPY {_TEMP} ({_TEMP_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "text", "text", "timestamptz", "text", "vector"])
            for i, text in enumerate(texts):
                content = text.replace("\x00", "")  # PostgreSQL text holds no NUL; a save drops it too (memory.save)
                occurred = now - timedelta(minutes=int(minutes[i]))
                search_text = build_search_text(content=content, occurred_at=occurred)
                copy.write_row((palace_id, KINDS[i % len(KINDS)], content, occurred, search_text, rows[i]))
        cursor.execute(_INSERT, [now, now])
        cursor.execute(f"TRUNCATE {_TEMP}")


def _load(
    *,
    palace_id: int,
    count: int,
    source: Source,
    rng: np.random.Generator,
    wrote: Callable[[int], None] = lambda _rows: None,
) -> None:
    done = 0
    while done < count:
        size = min(CHUNK, count - done)
        _copy_chunk(palace_id=palace_id, size=size, source=source, rng=rng)
        done += size
        wrote(size)


def _definitions() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE indexname = ANY(%s)", [list(DROPPED)])
        return {str(name): str(definition) for name, definition in cursor.fetchall()}


def build_settings() -> dict[str, str]:
    """maintenance_work_mem and parallel maintenance workers for the index builds (this session only): a quarter of
    the available memory up to 4 GB (the HNSW graph of 1.5 million 384-d halfvecs is ~2 GB), one worker per core
    beside the leader."""
    import psutil

    memory_mb = int(min(BUILD_MEMORY_CAP_MB, max(64, psutil.virtual_memory().available // 4 // 2**20)))
    workers = max(0, (os.cpu_count() or 1) - 1)
    return {"maintenance_work_mem": f"{memory_mb}MB", "max_parallel_maintenance_workers": str(workers)}


def _rebuild(definitions: dict[str, str], settings: dict[str, str], say: Callable[[str], None]) -> dict[str, float]:
    """Each dropped index again, from its exact definition; every one is attempted even if another fails."""
    seconds: dict[str, float] = {}
    failure: BaseException | None = None
    for name, definition in definitions.items():
        say(f"building {name} ({', '.join(f'{k}={v}' for k, v in settings.items())})")
        started = time.perf_counter()
        try:
            with connection.cursor() as cursor:
                for key, value in settings.items():
                    cursor.execute(f"SET {key} = '{value}'")  # values from build_settings, not from a caller
                cursor.execute(definition.replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS", 1))
                for key in settings:
                    cursor.execute(f"RESET {key}")
        except BaseException as exc:
            failure = failure or exc
            continue
        seconds[name] = round(time.perf_counter() - started, 1)
        say(f"built {name} in {seconds[name]} s")
    if failure is not None:
        raise failure
    return seconds


def bulk_load(
    *,
    targets: list[tuple[int, int, Source]],
    rng: np.random.Generator,
    say: Callable[[str], None],
) -> LoadReport:
    """Load `count` rows from `source` into each (palace id, count, source), as the module docstring says."""
    total = sum(count for _, count, _ in targets)
    definitions = _definitions() if total >= REBUILD_AT else {}
    settings = build_settings()
    report = LoadReport(rows=total, load_seconds=0.0, vacuum_seconds=0.0, build_settings=settings)
    progress = {"rows": 0, "shown": 0}
    started = time.perf_counter()

    def wrote(rows: int) -> None:
        progress["rows"] += rows
        if progress["rows"] - progress["shown"] >= PROGRESS_EVERY:
            progress["shown"] = progress["rows"]
            rate = progress["rows"] / (time.perf_counter() - started)
            say(f"loaded {progress['rows']:,} / {total:,} rows ({rate:,.0f} rows/s)")

    try:
        if definitions:
            say(f"dropping {', '.join(definitions)} and pausing autovacuum for the bulk load (rebuilt afterwards)")
            with connection.cursor() as cursor:
                cursor.execute("ALTER TABLE memory_memory SET (autovacuum_enabled = false)")
                for name in definitions:
                    cursor.execute(f"DROP INDEX {name}")  # names from DROPPED
        started = time.perf_counter()
        for palace_id, count, source in targets:
            _load(palace_id=palace_id, count=count, source=source, rng=rng, wrote=wrote)
        report.load_seconds = round(time.perf_counter() - started, 2)
        say(f"loaded {total:,} rows in {report.load_seconds} s ({report.rows_per_second:,} rows/s)")
        # VACUUM needs autocommit; inside a transaction (a test) ANALYZE is what can run.
        report.maintenance = "ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)"
        say(f"{report.maintenance} of the loaded table")
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute(f"{report.maintenance} memory_memory")
        report.vacuum_seconds = round(time.perf_counter() - started, 1)
    finally:
        if definitions:
            try:
                report.index_build_seconds = _rebuild(definitions, settings, say)
            finally:
                with connection.cursor() as cursor:
                    cursor.execute("ALTER TABLE memory_memory RESET (autovacuum_enabled)")
    word_statistics_clear()  # the cached word statistics predate the load
    return report


# What the searches read, loaded in this order (the last stays if shared buffers cannot hold them all).
PREWARMED = ("memory_memory", "memory_search_gin", "memory_embedding_hnsw")


def prewarm(say: Callable[[str], None]) -> dict[str, Any]:
    """Read the table and the search indexes into shared buffers (pg_prewarm), as a server that has served searches
    for a while holds them. A bulk-loaded and vacuumed table went through a small ring of buffers (measured at 1.5
    million memories: 178,000 table blocks read in 1.1 s, the just-built HNSW index found in them); what is not in
    them the first searches read page by page (a server just started: 4-5k pages a new query from the OS cache, the
    vector statement 50-66 ms instead of 5). {relation: {"blocks", "seconds"}}, or {"unavailable": why} where the
    extension is missing (an external server: README)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regproc('pg_prewarm') IS NOT NULL")
        if not cursor.fetchone()[0]:
            return {"unavailable": "the pg_prewarm extension is not installed in this database"}
        done: dict[str, Any] = {}
        for relation in PREWARMED:
            started = time.perf_counter()
            cursor.execute("SELECT pg_prewarm(%s::regclass)", [relation])
            blocks = int(cursor.fetchone()[0])
            done[relation] = {"blocks": blocks, "seconds": round(time.perf_counter() - started, 2)}
        say("read into shared buffers: " + ", ".join(f"{k} {v['blocks']:,} blocks" for k, v in done.items()))
    return done


def cleanup(palaces: list[Palace], users: list[Any]) -> None:
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


def centres_for(maker: TextMaker, memories: int) -> np.ndarray:
    """Real passage embeddings of synthetic notes: the cluster centres (ops.bench.synthetic)."""
    from memory.providers import embed_passages

    count = min(CENTRES, max(8, memories // 10))
    return np.asarray(embed_passages([maker.note() for _ in range(count)]), dtype=np.float32)


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
    say("background: embedding the centre notes")
    centres = centres_for(maker, memories)
    tag = f"bench-bg-{int(time.time())}-{random.randint(1000, 9999)}"
    owners = [make_owner(f"{tag}-{i}") for i in range(3)]
    background = Background(owners=owners, memories=memories)
    try:
        say(f"background: loading {memories} synthetic memories into three other palaces")
        source = synthetic_source(maker, VectorMaker(centres))
        targets = [(p.pk, n, source) for (_, p), n in zip(owners, split(memories, 3), strict=True)]
        bulk_load(targets=targets, rng=rng, say=say)
    except BaseException:
        background_remove(background)
        raise
    return background


def background_remove(background: Background, *, progress: Callable[[str], None] | None = None) -> None:
    """Delete the synthetic palaces, then refresh the word statistics: left as they were, they would describe
    100,000 rows that are gone, and the next eval's common-word bound would act on a table that no longer has them."""
    if progress is not None:
        progress("background: removing the synthetic palaces")
    cleanup([p for _, p in background.owners], [u for u, _ in background.owners])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_memory")
    word_statistics_clear()
