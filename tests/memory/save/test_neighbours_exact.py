"""A bulk chunk's neighbours in a small palace are computed exactly from the palace's vectors read once
(memory/save/neighbours.py `_exact_many`), and from the HNSW index past EXACT_UP_TO memories.

The exact answer is checked against PostgreSQL's own exact search (the full-precision distance, index scans off),
in a palace crowded by another palace's nearer rows (the case where the shared graph walks past everyone else's
entries); the other palace's rows never appear, and the same call for that palace finds them (the control)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.models import Memory, vector_literal
from memory.save import neighbours
from memory.save.neighbours import nearest_many, nearest_scan_set
from palace.actors import Actor
from palace.models import Palace
from palace.services import project_create
from tests.fakes.memories import make_memory, topic_vectors, unit

DIM = 384


def _exact_in_postgres(palace: Palace, vector: np.ndarray, limit: int = 5) -> list[int]:
    literal = vector_literal(vector)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute(
            "SELECT m.id FROM memory_memory m WHERE m.palace_id = %s AND m.status = 'active'"
            " AND m.embedding IS NOT NULL ORDER BY m.embedding <=> %s::vector LIMIT %s",
            [palace.pk, literal, limit],
        )
        found = [row[0] for row in cursor.fetchall()]
        cursor.execute("SET LOCAL enable_indexscan = on")
    return found


@pytest.fixture
def palaces(alice: Any, charlie: Any) -> dict[str, Any]:
    """alice's palace with 40 memories on one topic; charlie's with 60 nearer to the topic's centre."""
    mine = Palace.objects.get(personal_owner=alice)
    theirs = Palace.objects.get(personal_owner=charlie)
    for i, vector in enumerate(topic_vectors(40, seed=3, spread=0.6)):
        make_memory(mine, f"alice's note {i}", embedding=[float(x) for x in vector])
    make_memory(mine, "forgotten", status="forgotten", embedding=[float(x) for x in topic_vectors(1, seed=3)[0]])
    for i, vector in enumerate(topic_vectors(60, seed=3, spread=0.05)):
        make_memory(theirs, f"charlie's note {i}", embedding=[float(x) for x in vector])
    stray = unit(np.random.default_rng(1).normal(size=DIM))
    queries = [unit(v) for v in topic_vectors(6, seed=3, spread=0.3)] + [stray]
    return {"mine": mine, "theirs": theirs, "queries": queries}


def test_a_small_palaces_neighbours_are_exact_and_its_own(palaces: dict[str, Any]) -> None:
    mine, theirs, queries = palaces["mine"], palaces["theirs"], palaces["queries"]
    nearest_scan_set()
    vectors: list[list[float] | None] = [[float(x) for x in q] for q in queries]
    with CaptureQueriesContext(connection) as seen:
        found = nearest_many(palace=mine, vectors=[*vectors, None], status=Memory.Status.ACTIVE)
    assert len(seen.captured_queries) == 2 and "vector_send" in seen.captured_queries[0]["sql"]
    assert found[-1] == []
    own = set(Memory.objects.filter(palace=mine, status="active").values_list("id", flat=True))
    for query, neighbours_of in zip(queries, found, strict=False):
        assert [n.id for n in neighbours_of] == _exact_in_postgres(mine, query)
        assert {n.id for n in neighbours_of} <= own  # never charlie's, never the forgotten one
        sims = [n.similarity for n in neighbours_of]
        assert sims == sorted(sims, reverse=True) and all(-1.0 <= s <= 1.0 for s in sims)
    # The control: the same call for charlie's palace finds charlie's rows.
    theirs_found = nearest_many(palace=theirs, vectors=vectors[:1], status=Memory.Status.ACTIVE)[0]
    assert [n.id for n in theirs_found] == _exact_in_postgres(theirs, queries[0])
    assert all(n.content.startswith("charlie's note") for n in theirs_found)


def test_past_the_bound_the_index_answers(palaces: dict[str, Any], monkeypatch: Any) -> None:
    mine, queries = palaces["mine"], palaces["queries"]
    nearest_scan_set()
    monkeypatch.setattr(neighbours, "EXACT_UP_TO", 10)  # alice has 40: more than the bound
    vectors: list[list[float] | None] = [[float(x) for x in q] for q in queries[:3]]
    with CaptureQueriesContext(connection) as seen:
        found = nearest_many(palace=mine, vectors=vectors, status=Memory.Status.ACTIVE)
    assert any("UNION ALL" in q["sql"] for q in seen.captured_queries)
    own = set(Memory.objects.filter(palace=mine, status="active").values_list("id", flat=True))
    assert all(len(f) == 5 and {n.id for n in f} <= own for f in found)


def test_an_empty_palace_has_no_neighbours(alice: Any, palaces: dict[str, Any], system: Actor) -> None:
    empty = project_create(origin="github.com/acme/empty", owner=alice, actor=system)
    nearest_scan_set()
    assert nearest_many(palace=empty, vectors=[[1.0] * DIM], status=Memory.Status.ACTIVE) == [[]]
