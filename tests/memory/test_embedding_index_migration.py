"""memory/migrations/0021: the HNSW index rebuilt denser (m 24, ef_construction 128) without blocking writes, on a
table that already holds memories; reversible; the build gets room for its graph on a large table."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memory.models import HALF_DISTANCE, Memory, vector_literal
from palace.models import Palace
from tests.fakes.memories import make_memory, unit

denser = importlib.import_module("memory.migrations.0021_embedding_index_denser")
MB = 2**20


def test_the_build_gets_room_for_the_graph_of_a_large_table_and_never_less_than_the_server_has() -> None:
    assert denser.build_memory_mb(10_000, 64 * MB) is None  # the default holds it
    assert denser.build_memory_mb(150_000, 64 * MB) == 228  # 150,000 x 1,600 bytes
    assert denser.build_memory_mb(150_000, 1024 * MB) is None  # the server's own setting is larger: kept
    assert denser.build_memory_mb(10_000_000, 64 * MB) == 4096  # capped at 4 GB


def _index() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname LIKE 'memory_embedding_hnsw%'")
        return [str(row[0]) for row in cursor.fetchall()]


def _nearest_through_the_index(palace: Palace, vector: np.ndarray) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        try:
            cursor.execute(
                f"EXPLAIN SELECT m.id FROM memory_memory m ORDER BY {HALF_DISTANCE} LIMIT 3", [vector_literal(vector)]
            )
            plan = " ".join(str(row[0]) for row in cursor.fetchall())
            assert "memory_embedding_hnsw" in plan, plan
            cursor.execute(
                f"SELECT m.id FROM memory_memory m WHERE m.palace_id = %s ORDER BY {HALF_DISTANCE} LIMIT 3",
                [palace.pk, vector_literal(vector)],
            )
            return [row[0] for row in cursor.fetchall()]
        finally:
            cursor.execute("RESET enable_seqscan")


def _migrate(target: str) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([("memory", target)])


@pytest.mark.slow
def test_the_index_is_rebuilt_denser_over_the_memories_and_back(transactional_db: Any, alice: Any) -> None:
    palace = Palace.objects.get(personal_owner=alice)
    rng = np.random.default_rng(21)
    vectors = [unit(rng.normal(size=384)) for _ in range(40)]
    made = [make_memory(palace, f"memory {i}", embedding=v) for i, v in enumerate(vectors)]
    target = made[17]
    assert [d for d in _index() if "m='24', ef_construction='128'" in d]  # as installed

    try:
        _migrate("0020_access_records_prune_schedule")
        (before,) = _index()
        assert "m='16', ef_construction='64'" in before and "memory_embedding_hnsw ON" in before
        assert _nearest_through_the_index(palace, vectors[17])[0] == target.pk

        _migrate("0021_embedding_index_denser")
        (after,) = _index()  # the renamed old index is gone
        assert "CREATE INDEX memory_embedding_hnsw ON" in after and "halfvec_cosine_ops" in after
        assert "m='24', ef_construction='128'" in after
        assert _nearest_through_the_index(palace, vectors[17])[0] == target.pk
        assert Memory.objects.filter(palace=palace).count() == 40  # nothing lost on the way
    finally:
        _migrate("0021_embedding_index_denser")  # the rest of the suite runs on the installed schema
