"""`common_words` names only words common in the palaces searched (which the caller may read), never a word that
is frequent only in another team's palace (the plan's table-wide statistics would tell)."""

from __future__ import annotations

from typing import Any

from django.db import connection

import memory.search_arms as search_module
from memory.search import memory_search
from palace.models import Palace
from tests.memory.test_search import remember


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

    alice_result = memory_search(user=alice, query="coffee bluebird", reinforce=False, register_batch=False)
    assert alice_result.common_words == ["coffe"]  # frequent in her own palace (the positive control)
    assert alice_result.hits  # the search itself still works
    # charlie, for whom "bluebird" is frequent in his own palace, is told so
    charlie_result = memory_search(user=charlie, query="coffee bluebird", reinforce=False, register_batch=False)
    assert charlie_result.common_words == ["bluebird"]
