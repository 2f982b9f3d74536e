"""The one nearest-neighbour query (memory/save/neighbours.py) and its two callers, the save's disposition and
tombstone matching, when the HNSW scan gives up.

The scan gives up after hnsw.max_scan_tuples index entries; in production that happened when entries of rolled-back
rows filled the graph around a vector. Here the same give-up is made on purpose: another palace holds rows closer
to the saved text than the palace's own memory, the scan may visit one tuple, so it sees only those and returns
nothing for this palace. Each test first shows the index alone finds nothing under these settings (so it is the
exact fallback that finds the memory), then saves through the real pipeline.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.db import connection

from memory.models import HALF_DISTANCE, Memory, vector_literal
from memory.providers import set_embedder
from memory.save import memory_save, nearest
from palace.models import Palace
from tests.fakes.memories import SYSTEM, T0, make_memory, unit

OWN = "The deploy window is Thursday at 10 in the morning"
RESTATED = "The deploy window is Thursday at 10 in the morning."
DIM = 384


def _vectors() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    own = unit(rng.normal(size=DIM))
    restated = unit(own + 0.2 * unit(rng.normal(size=DIM)))  # cosine about 0.98 to its memory: still a MERGE
    return {"own": own, "restated": restated}


class _Fixed:
    """An embedder that gives the restatement its planned vector (and anything else a random one)."""

    name = "fixed-test"

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def passages(self, texts: list[str]) -> np.ndarray:
        return np.asarray([self.vectors["restated"] if RESTATED in t else unit(np.ones(DIM)) for t in texts])

    def query(self, text: str) -> np.ndarray:
        return self.vectors["restated"]


@pytest.fixture
def crowded(alice: Any, charlie: Any) -> dict[str, Any]:
    """alice's palace, charlie's (which `_missed_by_the_index` crowds) and the planned vectors."""
    vectors = _vectors()
    set_embedder(_Fixed(vectors))
    yield {
        "palace": Palace.objects.get(personal_owner=alice),
        "theirs": Palace.objects.get(personal_owner=charlie),
        "vectors": vectors,
    }
    set_embedder(None, active=False)


def _crowd(theirs: Palace, vectors: dict[str, np.ndarray]) -> None:
    """charlie's palace with 1,500 rows nearer to the restatement than alice's memory will be: more than the
    graph scan visits before its first answer (about ef_search times the graph's degree), so alice's row is not
    among them."""
    # The graph as this test's own rows make it: entries of rows earlier tests rolled back stay in the HNSW index
    # until VACUUM and change the graph's shape. A rebuild indexes live rows only; the test's transaction rolls it
    # back too.
    with connection.cursor() as cursor:
        cursor.execute("REINDEX INDEX memory_embedding_hnsw")
    rng = np.random.default_rng(11)
    near = [unit(vectors["restated"] + 0.0005 * rng.normal(size=DIM)) for _ in range(1500)]  # cosine about 0.99995
    Memory.objects.bulk_create(
        Memory(
            palace=theirs,
            kind="fact",
            content=f"charlie's note {i}",
            search_text=f"charlie's note {i}",
            created_at=T0,
            occurred_at=T0,
            embedding=[float(x) for x in vector],
            embedding_model="test",
        )
        for i, vector in enumerate(near)
    )


def _give_up_early() -> None:
    """The settings under which the graph scan stops before it reaches alice's row (this transaction only)."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("SET LOCAL enable_sort = off")  # a tiny table would rather sort its few rows
        cursor.execute("SET LOCAL hnsw.ef_search = 10")
        cursor.execute("SET LOCAL hnsw.max_scan_tuples = 1")


def _index_alone(palace: Palace, vector: np.ndarray, status: str) -> list[int]:
    literal = vector_literal(vector)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(
            f"SELECT m.id FROM memory_memory m WHERE m.palace_id = %s AND m.status = %s AND m.embedding IS NOT NULL"
            f" ORDER BY {HALF_DISTANCE} LIMIT 5",
            [palace.pk, status, literal],
        )
        return [row[0] for row in cursor.fetchall()]


def _missed_by_the_index(crowded: dict[str, Any], status: str = "active") -> Memory:
    """alice's memory beside charlie's crowd, placed so that the index scan under `_give_up_early` does not return
    it; the settings stay on for the rest of the test.

    Whether it does depends on the graph, and pgvector draws each entry's level at random: in about one graph in
    forty (measured: 1 in 40 at ef_search 10 and at 1) the scan's first batch reaches alice's row, and making her row
    again in the same graph did not change that (5 tries in a row). So the crowd and her row are made again, in a
    new graph, up to five times; the premise is then asserted, so the tests below always test the exact fallback and
    never pass through the index by chance."""
    palace, theirs, vectors = crowded["palace"], crowded["theirs"], crowded["vectors"]
    for _ in range(5):
        _crowd(theirs, vectors)
        own = make_memory(palace, OWN, embedding=vectors["own"], status=status)
        _give_up_early()
        if _index_alone(palace, vectors["restated"], status) == []:
            return own
        own.delete()
        Memory.objects.filter(palace=theirs).delete()
    pytest.fail("the index scan found alice's row in five graphs: the give-up this file tests did not happen")


def test_nearest_asks_exactly_when_the_index_gives_up(crowded: dict[str, Any]) -> None:
    palace, vectors = crowded["palace"], crowded["vectors"]
    own = _missed_by_the_index(crowded)

    assert _index_alone(palace, vectors["restated"], "active") == []  # the give-up itself
    found = nearest(palace=palace, vector=list(vectors["restated"]), status=Memory.Status.ACTIVE)

    assert [n.id for n in found] == [own.pk]
    assert found[0].similarity > 0.97


def test_a_restatement_merges_into_its_memory_when_the_index_gives_up(alice: Any, crowded: dict[str, Any]) -> None:
    palace, vectors = crowded["palace"], crowded["vectors"]
    own = _missed_by_the_index(crowded)
    assert _index_alone(palace, vectors["restated"], "active") == []

    result = memory_save(palace=palace, actor=SYSTEM, content=RESTATED, kind="fact")

    assert result.disposition == "merge" and result.merged_into == own.pk
    assert Memory.objects.filter(palace=palace).count() == 1  # no copy saved


def test_a_restated_forgotten_memory_is_found_when_the_index_gives_up(alice: Any, crowded: dict[str, Any]) -> None:
    palace, vectors = crowded["palace"], crowded["vectors"]
    gone = _missed_by_the_index(crowded, Memory.Status.FORGOTTEN)
    assert _index_alone(palace, vectors["restated"], "forgotten") == []

    result = memory_save(palace=palace, actor=SYSTEM, content=RESTATED, kind="fact")

    assert result.disposition == "defer" and result.forgotten == gone.pk
    assert "matches the forgotten" in result.hint
    assert Memory.objects.filter(palace=palace).count() == 1  # the tombstone holds: nothing new saved
