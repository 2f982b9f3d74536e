"""The palace overview (review.selectors.memory_overview): memory counts from memory.selectors.stats with the due count
beside them, as REST's /stats, MCP's memory_stats and the panel's Today show them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memory.models import Edge
from palace.errors import NotFound
from palace.models import Palace
from review.selectors import memory_overview, review_due_count
from tests.fakes.memories import T0, make_memory


def test_overview_counts_and_the_due_count_agree_with_their_sources(
    alice: Any, charlie: Any, palace: Palace, project: Palace
) -> None:
    now = T0 + timedelta(days=3)
    a = make_memory(palace, "a", created_at=now - timedelta(days=2), review_enrolled=True, hit_count=2)
    b = make_memory(palace, "b", kind="skill", created_at=now - timedelta(hours=1))
    make_memory(palace, "c", status="forgotten", created_at=now - timedelta(days=30))
    Edge.objects.create(palace=palace, from_memory=a, to_memory=b, kind="contradicts", status="pending")
    make_memory(project, "elsewhere", created_at=now)  # another palace: not counted
    overview = memory_overview(user=alice, palaces=[palace], now=now, rooms=True)
    stats = overview.stats
    assert (stats.total, stats.by_status["active"], stats.by_status["forgotten"]) == (3, 2, 1)
    assert stats.by_kind == {"fact": 1, "preference": 0, "decision": 0, "episode": 0, "skill": 1}
    assert (stats.pending_contradictions, stats.review_enrolled, stats.created_last_7_days) == (1, 1, 2)
    assert stats.signal_ratio == 0.5 and "1 of 2" in stats.signal_reason
    assert list(stats.created_by_day.values())[-1] == 1 and sum(stats.created_by_day.values()) == 2
    assert overview.reviews_due == review_due_count(user=alice, palace_ids=[palace.pk], now=now) == 1
    assert [r.name for r in overview.rooms] == ["Fact Hall", "Skill Workshop"]
    both = memory_overview(user=alice, palaces=[palace, project], now=now)
    assert both.stats.total == 4 and both.rooms == []
    with pytest.raises(NotFound):  # an outsider's due count over alice's palace
        memory_overview(user=charlie, palaces=[palace], now=now)


def test_an_empty_palace_has_an_unknown_signal_ratio(alice: Any, palace: Palace) -> None:
    overview = memory_overview(user=alice, palaces=[palace])
    assert overview.stats.total == 0 and overview.stats.signal_ratio is None
    assert overview.stats.signal_reason.startswith("unknown")
    assert overview.reviews_due == 0
