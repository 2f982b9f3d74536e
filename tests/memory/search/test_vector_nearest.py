"""memory.search.vector_nearest: the semantic arm's statement alone, approximate (the HNSW index, as a search runs
it) or exact (index scans off), which `atrium bench search` compares for its recall figures.

To see the two differ, the graph scan is made to give up (as in tests/memory/save/test_neighbours.py): another
palace holds rows nearer to the query than alice's memory, and the scan may visit one index entry."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from django.db import connection

from memory.models import Memory
from memory.search import HNSW_EF_SEARCH, vector_arm_settings, vector_nearest
from palace.models import Palace
from tests.fakes.memories import T0, make_memory, unit

DIM = 384


def _crowd(palace: Palace, near: np.ndarray) -> None:
    rng = np.random.default_rng(11)
    Memory.objects.bulk_create(
        Memory(
            palace=palace,
            kind="fact",
            content=f"charlie's note {i}",
            search_text=f"charlie's note {i}",
            created_at=T0,
            occurred_at=T0,
            embedding=[float(x) for x in unit(near + 0.0005 * rng.normal(size=DIM))],
            embedding_model="test",
        )
        for i in range(1500)
    )


def _index_gives_up() -> None:
    """This transaction only: the planner takes the HNSW index even on a small table, whose scan stops after one
    index entry (the arm sets its own ef_search and iterative scan; max_scan_tuples it leaves to the server)."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("SET LOCAL hnsw.max_scan_tuples = 1")


def test_exact_search_finds_what_the_index_gave_up_on(alice: Any, charlie: Any) -> None:
    rng = np.random.default_rng(7)
    query = unit(rng.normal(size=DIM))
    mine = Palace.objects.get(personal_owner=alice)
    theirs = Palace.objects.get(personal_owner=charlie)
    own = make_memory(mine, "the deploy window is Thursday", embedding=unit(query + 0.2 * unit(rng.normal(size=DIM))))
    other = make_memory(mine, "lunch is at noon", embedding=unit(rng.normal(size=DIM)))
    _crowd(theirs, query)

    assert vector_nearest(vector=query, palaces=[mine.pk], k=1) == [own.pk]  # the planner's own choice: found
    _index_gives_up()
    assert vector_nearest(vector=query, palaces=[mine.pk]) == []  # the index alone: a recall of 0 for this query
    assert vector_nearest(vector=query, palaces=[mine.pk], exact=True) == [own.pk, other.pk]  # every row compared
    assert vector_arm_settings()["hnsw.max_scan_tuples"] == "1"


def test_the_settings_reported_are_the_ones_the_arm_runs_with(db: Any) -> None:
    settings = vector_arm_settings()

    assert settings["hnsw.iterative_scan"] == "relaxed_order"
    assert settings["hnsw.ef_search"] == str(HNSW_EF_SEARCH)
    assert int(settings["hnsw.max_scan_tuples"]) > 0  # the server's own value, read, not assumed


@pytest.mark.django_db(transaction=True)
def test_a_new_session_reports_the_servers_values_too() -> None:
    """A database session that has not touched a vector yet has not loaded pgvector's library, whose settings are
    then unknown to it (`atrium shell` reported them as None before any search)."""
    connection.close()  # the next statement opens a new session
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.max_scan_tuples', true)")
        assert cursor.fetchone() == (None,)  # what the report read before it loaded the library itself
    connection.close()

    settings = vector_arm_settings()

    assert int(settings["hnsw.max_scan_tuples"]) > 0 and float(settings["hnsw.scan_mem_multiplier"]) > 0


@pytest.mark.parametrize(
    ("rows", "most", "width"),
    [
        (0, None, 100),
        (15_000, None, 100),
        (22_500, None, 150),
        (30_000, None, 200),
        (1_500_000, None, 200),  # the default widest (ATRIUM_VECTOR_EF_SEARCH_MAX 200)
        (60_000, 400, 400),  # an operator's wider one
        (1_500_000, 400, 400),
        (60_000, 50, 50),  # or narrower
    ],
)
def test_the_search_widens_with_the_table_and_the_arm_runs_with_that_width(
    alice: Any, monkeypatch: Any, settings: Any, rows: int, most: int | None, width: int
) -> None:
    """hnsw.ef_search follows the table's row estimate (the statistics the search caches) up to the operator's
    widest: the arm's own statement runs with it, and the settings it reports say the same."""
    from memory.search import arms

    if most is not None:
        settings.ATRIUM_VECTOR_EF_SEARCH_MAX = most
    stats = arms._LexemeStats(rows=float(rows), share={}, unlisted=0.0, expires=time.monotonic() + 300)
    monkeypatch.setattr(arms, "_lexeme_stats_cache", [stats])
    mine = Palace.objects.get(personal_owner=alice)
    query = unit(np.random.default_rng(3).normal(size=DIM))
    own = make_memory(mine, "the deploy window is Thursday", embedding=query)
    ran: list[str] = []

    def watch(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        ran.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watch):
        assert vector_nearest(vector=query, palaces=[mine.pk], k=1) == [own.pk]
    assert arms.hnsw_ef_search() == width
    assert sum(f"set_config('hnsw.ef_search', '{width}', true)" in sql for sql in ran) == 1
    assert vector_arm_settings()["hnsw.ef_search"] == str(width)
