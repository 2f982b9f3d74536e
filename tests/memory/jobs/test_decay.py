"""Decay and open contradictions (memory/jobs/decay.py): a memory on either side of a pending `contradicts` edge is
never archived, however stale and weak; the same memory is archived once the edge is decided."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memory.jobs import decay_run
from memory.models import Edge, Memory
from palace.models import OpLog, Palace
from tests.fakes.memories import T0, make_memory

DAY = timedelta(days=1)


@pytest.fixture
def palace(alice: Any) -> Palace:
    return Palace.objects.get(personal_owner=alice)


def _stale(palace: Palace, content: str) -> Memory:
    """Past its decay date (45 days untouched, after 30) and weak (importance 0.1, below 0.3)."""
    return make_memory(palace, content=content, importance=0.1, created_at=T0 - 45 * DAY)


def _contradiction(palace: Palace, new: Memory, old: Memory, status: str = Edge.Status.PENDING) -> Edge:
    return Edge.objects.create(palace=palace, from_memory=new, to_memory=old, kind=Edge.Kind.CONTRADICTS, status=status)


def test_decay_never_archives_either_side_of_an_open_contradiction(palace: Palace) -> None:
    newer, older = _stale(palace, "The API listens on 8001."), _stale(palace, "The API listens on 8000.")
    edge = _contradiction(palace, newer, older)
    lone = _stale(palace, "The old wiki moved to the intranet.")  # positive control: same age and weight, no edge
    settled_new, settled_old = _stale(palace, "Lunch is at noon."), _stale(palace, "Lunch is at one.")
    _contradiction(palace, settled_new, settled_old, status=Edge.Status.DISMISSED)  # decided: no longer open

    assert decay_run(now=T0, dry_run=True).candidates == [lone.pk, settled_new.pk, settled_old.pk]
    result = decay_run(now=T0)

    assert result.archived == [lone.pk, settled_new.pk, settled_old.pk]
    statuses = dict(Memory.objects.values_list("pk", "status"))
    assert statuses[newer.pk] == statuses[older.pk] == "active"
    assert statuses[lone.pk] == statuses[settled_new.pk] == statuses[settled_old.pk] == "archived"
    assert not OpLog.objects.filter(op="memory.decay", target_id__in=[newer.pk, older.pk]).exists()

    # The same two memories, once the contradiction is decided, decay like any other.
    Edge.objects.filter(pk=edge.pk).update(status=Edge.Status.CONFIRMED, resolution="both_stand")
    assert decay_run(now=T0).archived == [newer.pk, older.pk]
    assert set(Memory.objects.filter(pk__in=[newer.pk, older.pk]).values_list("status", flat=True)) == {"archived"}
