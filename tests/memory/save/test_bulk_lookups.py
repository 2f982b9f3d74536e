"""What a bulk save asks once a chunk instead of once an item keeps the same answers: a forgotten memory's content
is still deferred (the tombstone check runs when the palace has one), and each item still links the known entities
its own text mentions, no others."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.knowledge import entities_extract_many
from memory.knowledge.extraction import Note
from memory.lifecycle import memory_forget
from memory.models import Memory
from memory.save import SaveItem, SaveResult, memory_save_bulk
from palace.actors import Actor
from palace.models import Palace

Save = Callable[..., SaveResult]


def test_a_bulk_save_still_defers_the_content_of_a_forgotten_memory(
    save: Save, alice_palace: Palace, alice_actor: Actor
) -> None:
    first = save("The API server listens on port 8000.").memory
    assert first is not None
    items = [
        SaveItem(content="The API server listens on port 8000.", kind="fact"),
        SaveItem(content="The billing worker retries three times before it gives up.", kind="fact"),
    ]
    before = memory_save_bulk(palace=alice_palace, actor=alice_actor, items=items[:1], source="backfill").items[0]
    assert isinstance(before, SaveResult) and before.disposition == "merge"  # the control: not forgotten yet
    memory_forget(memory_id=first.pk, actor=alice_actor, reason="moved behind the gateway")
    count = Memory.objects.count()

    results = memory_save_bulk(palace=alice_palace, actor=alice_actor, items=items, source="backfill").items

    assert isinstance(results[0], SaveResult) and results[0].disposition == "defer"
    assert results[0].forgotten == first.pk and results[0].memory is None
    assert isinstance(results[1], SaveResult) and results[1].disposition == "accept"
    assert Memory.objects.count() == count + 1  # the new fact only, no copy of the forgotten one


def test_entities_found_for_a_chunk_are_each_notes_own(alice_palace: Palace, alice_actor: Actor, save: Save) -> None:
    save("Priya Raman owns the ledger service.", entities=[{"name": "Priya Raman", "kind": "person"}])
    save("The ledger service runs on Kubernetes.", entities=[{"name": "Kubernetes", "kind": "tool"}])
    notes = [
        Note(text="Ask Priya Raman about the quarterly close."),
        Note(text="We moved the cron jobs to Kubernetes last week."),
        Note(text="Lunch is at noon."),
    ]

    with CaptureQueriesContext(connection) as queries:
        found: Any = entities_extract_many(palace=alice_palace, notes=notes)

    # One lookup for the chunk, its keys bound as one array (a failed batch query falls back to one a note, which
    # gives the same names: only the count tells them apart).
    lookups = [q["sql"] for q in queries if 'FROM "memory_entity"' in q["sql"]]
    assert len(lookups) == 1, lookups
    assert "= ANY(" in lookups[0] and " IN (" not in lookups[0]

    names = [{m.name for m in e.mentions if m.source == "rules"} for e in found]
    assert "Priya Raman" in names[0] and "Kubernetes" not in names[0]
    assert "Kubernetes" in names[1] and "Priya Raman" not in names[1]
    assert not {"Priya Raman", "Kubernetes"} & names[2]
