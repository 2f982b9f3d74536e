"""`common_words` names only words common in the palaces searched (which the caller may read), never a word that
is frequent only in another team's palace (the plan's table-wide statistics would tell)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

import memory.search.arms as search_module
from memory.search import SearchRequest, memory_search
from palace.models import Palace
from tests.fakes.memories import remember


def refresh_word_statistics() -> None:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_memory")
    search_module._lexeme_stats_cache.clear()


def fresh_counting(monkeypatch: Any) -> None:
    """Word statistics of the rows saved so far, no answer kept from before, and 3 rows make a word common."""
    refresh_word_statistics()
    monkeypatch.setattr(search_module, "_lexeme_stats_cache", [])
    monkeypatch.setattr(search_module, "_scope_common_cache", {})
    monkeypatch.setattr(search_module, "LEX_COMMON_ROWS", 3)


def recording(ran: list[tuple[str, list[str]]]) -> Any:
    """A database execute wrapper that notes each counting statement: ("walk" or "index", its lexemes)."""

    def spy(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if (way := _count_statements(sql)) is not None:
            ran.append((way, list(params[-1])))
        return execute(sql, params, many, context)

    return spy


def test_a_word_frequent_only_in_charlies_palace_is_not_reported_to_alice(
    alice: Any, charlie: Any, alice_palace: Palace, monkeypatch: Any, embedder_down: None
) -> None:
    charlie_palace = Palace.objects.get(personal_owner=charlie)
    for i in range(8):
        remember(charlie_palace, f"Merger codename Bluebird draft {i}", embed=False)
        remember(alice_palace, f"Coffee note {i} from the kitchen", embed=False)
    remember(alice_palace, "Bluebird is the name of the cafe downstairs", embed=False)
    refresh_word_statistics()
    monkeypatch.setattr(search_module, "_lexeme_stats_cache", [])  # and none left for the next test
    monkeypatch.setattr(search_module, "LEX_COMMON_ROWS", 3)  # "bluebird" in 9 rows, "coffe" in 8: both common

    alice_result = memory_search(
        user=alice, request=SearchRequest(query="coffee bluebird"), reinforce=False, register_batch=False
    )
    assert alice_result.common_words == ["coffe"]  # frequent in her own palace (the positive control)
    assert alice_result.hits  # the search itself still works
    # charlie, for whom "bluebird" is frequent in his own palace, is told so
    charlie_result = memory_search(
        user=charlie, request=SearchRequest(query="coffee bluebird"), reinforce=False, register_batch=False
    )
    assert charlie_result.common_words == ["bluebird"]


def test_whether_a_word_is_common_in_a_scope_is_counted_once_then_kept(
    alice: Any, alice_palace: Palace, monkeypatch: Any, embedder_down: None
) -> None:
    for i in range(5):
        remember(alice_palace, f"Coffee note {i} from the kitchen", embed=False)
    fresh_counting(monkeypatch)
    counted: list[tuple[str, list[str]]] = []  # either way of counting (the walk or the index)

    with connection.execute_wrapper(recording(counted)):
        first = memory_search(user=alice, request=SearchRequest(query="coffee"), reinforce=False, register_batch=False)
        again = memory_search(user=alice, request=SearchRequest(query="coffee"), reinforce=False, register_batch=False)
    assert first.common_words == again.common_words == ["coffe"]
    assert len(counted) == 1  # the second search read the kept answer
    # A changed threshold is another question: counted afresh.
    monkeypatch.setattr(search_module, "LEX_COMMON_ROWS", 4)
    with connection.execute_wrapper(recording(counted)):
        third = memory_search(user=alice, request=SearchRequest(query="coffee"), reinforce=False, register_batch=False)
    assert third.common_words == ["coffe"]
    assert len(counted) == 2


def _count_statements(sql: str) -> str | None:
    if "CROSS JOIN unnest(%s::text[]) AS lx" in sql:
        return "walk"
    if "FROM unnest(%s::text[]) AS lx" in sql:
        return "index"
    return None


@pytest.mark.parametrize("walk_share", [0.0, 1.01], ids=["every-word-walked-first", "every-word-by-the-index"])
def test_both_ways_of_counting_give_the_same_exact_answer(
    walk_share: float, alice: Any, charlie: Any, alice_palace: Palace, monkeypatch: Any, embedder_down: None
) -> None:
    """The walk over the scope's rows and the count over the word's index entries answer alike: the words common in
    alice's palace, and not the one only charlie's palace makes frequent table-wide."""
    charlie_palace = Palace.objects.get(personal_owner=charlie)
    for i in range(6):
        remember(alice_palace, f"Coffee note {i} from the kitchen", embed=False)
        remember(alice_palace, f"Garden plan {i} for the spring", embed=False)
    for i in range(10):
        remember(charlie_palace, f"Merger codename Bluebird draft {i}", embed=False)
    remember(alice_palace, "Bluebird is the name of the cafe downstairs", embed=False)
    fresh_counting(monkeypatch)
    monkeypatch.setattr(search_module, "WALK_SHARE", walk_share)
    ran: list[tuple[str, list[str]]] = []
    with connection.execute_wrapper(recording(ran)):
        result = memory_search(
            user=alice, request=SearchRequest(query="coffee garden bluebird"), reinforce=False, register_batch=False
        )
    assert sorted(result.common_words) == ["coffe", "garden"]
    assert ran[0][0] == ("walk" if walk_share == 0.0 else "index")
    charlie_result = memory_search(
        user=charlie, request=SearchRequest(query="coffee garden bluebird"), reinforce=False, register_batch=False
    )
    assert charlie_result.common_words == ["bluebird"]  # control: frequent in his own palace


def test_a_walk_that_ends_before_the_scope_leaves_the_word_to_the_index(
    alice: Any, charlie: Any, alice_palace: Palace, monkeypatch: Any, embedder_down: None
) -> None:
    """A word frequent table-wide (charlie's rows) but rare in alice's palace: the walk reads its rows without
    finding it often enough and without reaching the end of her palace, so the index counts it: not common."""
    charlie_palace = Palace.objects.get(personal_owner=charlie)
    for i in range(30):
        remember(charlie_palace, f"Merger codename Bluebird draft {i}", embed=False)
    for i in range(12):
        remember(alice_palace, f"Coffee note {i} from the kitchen", embed=False)
    remember(alice_palace, "Bluebird is the name of the cafe downstairs", embed=False)
    fresh_counting(monkeypatch)
    monkeypatch.setattr(search_module, "WALK_MARGIN", 0.5)  # "bluebird" in ~70 % of rows: a walk of 3 rows
    ran: list[tuple[str, list[str]]] = []
    with connection.execute_wrapper(recording(ran)):
        result = memory_search(
            user=alice, request=SearchRequest(query="bluebird coffee"), reinforce=False, register_batch=False
        )
    assert result.common_words == ["coffe"]  # the positive control: 12 of her rows
    assert ("index", ["bluebird"]) in ran  # the walk left it open
    assert ran[0][0] == "walk"


def test_a_scope_without_rows_has_no_common_word(
    alice: Any, bob: Any, alice_palace: Palace, monkeypatch: Any, embedder_down: None
) -> None:
    for i in range(6):
        remember(alice_palace, f"Coffee note {i} from the kitchen", embed=False)
    fresh_counting(monkeypatch)
    ran: list[tuple[str, list[str]]] = []
    with connection.execute_wrapper(recording(ran)):
        empty = memory_search(user=bob, request=SearchRequest(query="coffee"), reinforce=False, register_batch=False)
    assert empty.common_words == [] and empty.hits == []
    assert [way for way, _ in ran] == ["walk"]  # the walk found no row at all: nothing left for the index
    own = memory_search(user=alice, request=SearchRequest(query="coffee"), reinforce=False, register_batch=False)
    assert own.common_words == ["coffe"]  # control
