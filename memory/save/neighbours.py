"""The nearest memories of one palace to a vector: what the write pipeline disposes a save against (the active
memories) and what tombstone matching compares it with (the forgotten ones). One query for both."""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db import connection

from memory.judge import Neighbour
from memory.models import EMBEDDING_DIM, HALF_DISTANCE, vector_literal
from palace.models import Palace

NEIGHBOURS = 5  # nearest neighbours considered for MERGE / DEFER
# A chunk's neighbours are computed exactly (`_exact_many`) while the palace holds at most this many memories in the
# status asked: reading them once costs less than one index search per item, which walks a graph shared with every
# other palace (see nearest_many).
EXACT_UP_TO = 4_000

_COLUMNS = "m.id, m.kind, m.content, m.placard, m.speaker, m.embedding <=> %s::vector AS d"
_WHERE = "m.palace_id = %s AND m.status = %s AND m.embedding IS NOT NULL"


def nearest_scan_set() -> None:
    """Keep scanning the HNSW graph until enough rows pass the palace filter (pgvector >= 0.8), for the rest of the
    transaction: a bulk save sets it once for its chunk and passes `scan_set` to each `nearest`."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")


def nearest(
    *, palace: Palace, vector: list[float], status: str, limit: int = NEIGHBOURS, scan_set: bool = False
) -> list[Neighbour]:
    """The `limit` nearest memories of `palace` in `status`, nearest first (must run inside a transaction;
    `scan_set`: the caller ran `nearest_scan_set` in it).

    1. Ask the HNSW index, ordered by the half-precision distance it is built on (memory.models), judged by the exact
       cosine of the stored full-precision vectors: the merge and contradiction thresholds are that precise.
    2. When the index finds nothing, ask exactly. The graph scan gives up after hnsw.max_scan_tuples index entries,
       and entries of deleted or rolled-back rows count until VACUUM: seen as an exact duplicate saved as new after
       a test run had rolled back thousands of inserts. The exact query orders by the full-precision distance, which
       is not the index's expression, so PostgreSQL reads the palace's rows by the palace index.
    """
    literal = vector_literal(vector)
    if not scan_set:
        nearest_scan_set()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_COLUMNS} FROM memory_memory m WHERE {_WHERE} ORDER BY {HALF_DISTANCE} LIMIT %s",  # noqa: S608
            [literal, palace.pk, status, literal, limit],
        )
        rows = cursor.fetchall()
        if not rows:
            cursor.execute(
                f"SELECT {_COLUMNS} FROM memory_memory m WHERE {_WHERE} ORDER BY d LIMIT %s",  # noqa: S608
                [literal, palace.pk, status, limit],
            )
            rows = cursor.fetchall()
    return _neighbours(rows)


def _neighbours(rows: list[tuple[Any, ...]]) -> list[Neighbour]:
    rows.sort(key=lambda r: float(r[5]))  # relaxed_order: the index order is approximate
    return [
        Neighbour(id=pk, kind=kind, content=content, placard=placard, speaker=speaker, similarity=1.0 - float(distance))
        for pk, kind, content, placard, speaker, distance in rows
    ]


def nearest_many(
    *, palace: Palace, vectors: list[list[float] | None], status: str, limit: int = NEIGHBOURS
) -> list[list[Neighbour]]:
    """`nearest` for each of many vectors (a bulk chunk's items, before any of them is written).

    A palace of at most EXACT_UP_TO such memories: exactly, from its vectors read once (`_exact_many`). The HNSW index
    is one graph over every palace, so a small palace's search walks and skips the entries of all the others (a
    backfill of 1,500 turns next to an earlier one read 2.5 ms a vector, and slowed as the table grew). A larger
    palace: one statement, one index search a vector, joined with UNION ALL and told apart by their position; a
    vector the index finds nothing for is asked exactly on its own, as `nearest` does (once the palace is known to
    have any such row: a new palace's first chunk asks nothing more). The caller has run `nearest_scan_set`."""
    if all(v is None for v in vectors):
        return [[] for _ in vectors]
    exact = _exact_many(palace=palace, vectors=vectors, status=status, limit=limit)
    if exact is not None:
        return exact
    asked = [(i, vector_literal(v)) for i, v in enumerate(vectors) if v is not None]
    found: list[list[tuple[Any, ...]]] = [[] for _ in vectors]
    # Constants only (the columns, the filter, the distance): every value is a parameter.
    one = f"(SELECT %s AS i, {_COLUMNS} FROM memory_memory m WHERE {_WHERE} ORDER BY {HALF_DISTANCE} LIMIT %s)"  # noqa: S608
    params: list[Any] = []
    for i, literal in asked:
        params += [i, literal, palace.pk, status, literal, limit]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join([one] * len(asked)), params)
        for i, *row in cursor.fetchall():
            found[i].append(tuple(row))
        empty = [(i, literal) for i, literal in asked if not found[i]]
        if empty:  # nothing from the index: is there anything at all (a new palace has nothing to ask exactly)?
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM memory_memory m WHERE {_WHERE})", [palace.pk, status])  # noqa: S608
            empty = empty if cursor.fetchone()[0] else []
        for i, literal in empty:
            cursor.execute(
                f"SELECT {_COLUMNS} FROM memory_memory m WHERE {_WHERE} ORDER BY d LIMIT %s",  # noqa: S608
                [literal, palace.pk, status, limit],
            )
            found[i] = cursor.fetchall()
    return [_neighbours(rows) for rows in found]


def _exact_many(
    *, palace: Palace, vectors: list[list[float] | None], status: str, limit: int
) -> list[list[Neighbour]] | None:
    """The exact `limit` nearest of each vector among the palace's memories in `status`, by the cosine distance of
    the stored full-precision vectors (what `nearest` judges by), from one read of them; None when the palace holds
    more than EXACT_UP_TO (the caller asks the index). Two statements whatever the chunk's size: the ids and vectors
    (pgvector's binary form, `vector_send`), then the chosen rows' columns."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.id, vector_send(m.embedding) FROM memory_memory m WHERE {_WHERE} LIMIT %s",  # noqa: S608
            [palace.pk, status, EXACT_UP_TO + 1],
        )
        stored = cursor.fetchall()
    if len(stored) > EXACT_UP_TO:
        return None
    if not stored:
        return [[] for _ in vectors]
    ids = np.array([row[0] for row in stored], dtype=np.int64)
    # vector_send: int16 dimensions, int16 unused, then each float4 in network byte order.
    raw = np.frombuffer(b"".join(bytes(row[1])[4:] for row in stored), dtype=">f4")
    matrix = raw.reshape(len(stored), EMBEDDING_DIM).astype(np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    chosen: list[list[tuple[int, float]]] = []
    for vector in vectors:
        if vector is None:
            chosen.append([])
            continue
        query = np.asarray(vector, dtype=np.float32)
        distance = 1.0 - matrix @ (query / max(float(np.linalg.norm(query)), 1e-12))
        top = np.argsort(distance, kind="stable")[:limit]
        chosen.append([(int(ids[j]), float(distance[j])) for j in top])
    wanted = sorted({pk for picks in chosen for pk, _ in picks})
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, m.kind, m.content, m.placard, m.speaker FROM memory_memory m WHERE m.id = ANY(%s)", [wanted]
        )
        columns = {row[0]: row for row in cursor.fetchall()}
    return [_neighbours([(*columns[pk], d) for pk, d in picks if pk in columns]) for picks in chosen]
