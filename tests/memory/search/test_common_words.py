"""`common_words` names only words common in the palaces searched (which the caller may read), never a word that
is frequent only in another team's palace (the plan's table-wide statistics would tell)."""

from __future__ import annotations

from typing import Any

from django.db import connection

import memory.search.arms as search_module
from memory.search import SearchRequest, memory_search
from palace.models import Palace
from tests.fakes.memories import remember


def refresh_word_statistics() -> None:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_memory")
    search_module._lexeme_stats_cache.clear()


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
    refresh_word_statistics()
    monkeypatch.setattr(search_module, "_lexeme_stats_cache", [])
    monkeypatch.setattr(search_module, "_scope_common_cache", {})
    monkeypatch.setattr(search_module, "LEX_COMMON_ROWS", 3)
    counted: list[str] = []

    def spy(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "FROM unnest(%s::text[]) AS lx" in sql:
            counted.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy):
        first = memory_search(user=alice, request=SearchRequest(query="coffee"), reinforce=False, register_batch=False)
        again = memory_search(user=alice, request=SearchRequest(query="coffee"), reinforce=False, register_batch=False)
    assert first.common_words == again.common_words == ["coffe"]
    assert len(counted) == 1  # the second search read the kept answer
    # A changed threshold is another question: counted afresh.
    monkeypatch.setattr(search_module, "LEX_COMMON_ROWS", 4)
    with connection.execute_wrapper(spy):
        third = memory_search(user=alice, request=SearchRequest(query="coffee"), reinforce=False, register_batch=False)
    assert third.common_words == ["coffe"]
    assert len(counted) == 2
