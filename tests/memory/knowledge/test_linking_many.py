"""A bulk save links its chunk's entities at once (memory.knowledge.entities_link_many): each memory gets what
linking them one after the other gives, the op rows record it, and a batch that fails falls back to one at a time."""

from __future__ import annotations

from typing import Any

import pytest

from memory.knowledge import linking
from memory.models import Entity, MemoryEntity
from memory.save import SaveItem, SaveResult, memory_save_bulk
from palace.actors import Actor
from palace.models import OpLog, Palace

_ITEMS = (
    ("Mara reviews every pull request of the billing service on the same day.", [{"name": "Mara"}]),
    ("The search service deploys on Thursdays after the load test passes.", [{"name": "Mara", "kind": "person"}]),
    ("Quarterly budgets for the gateway team are approved in March.", [{"name": "Mara", "aliases": ["M. Ode"]}]),
    ("The cache of the gateway warms up after every deploy.", [{"name": "Mara Lee", "aliases": ["Mara"]}]),
)


def _save(palace: Palace, actor: Actor) -> list[SaveResult]:
    items = [SaveItem(content=text, kind="fact", entities=stated) for text, stated in _ITEMS]
    results = memory_save_bulk(palace=palace, actor=actor, items=items, source="backfill", chunk_items=10).items
    assert all(isinstance(r, SaveResult) and r.memory is not None and r.disposition == "accept" for r in results)
    return [r for r in results if isinstance(r, SaveResult)]


def _check(palace: Palace, results: list[SaveResult]) -> None:
    mara = Entity.objects.get(palace=palace, key="mara")
    # The first memory created Mara, the later ones reused her; the second re-kinded her, the third added an alias.
    assert mara.kind == "person" and mara.aliases == ["M. Ode"] and mara.alias_keys == ["m. ode"]
    lee = Entity.objects.get(palace=palace, key="mara lee")  # an alias alone never decides: created beside Mara
    assert [r.entities.created if r.entities else None for r in results] == [[mara.pk], [], [], [lee.pk]]
    assert [[(n.id, o.id, o.kind) for n, o in r.entities.ambiguous] if r.entities else None for r in results] == [
        [],
        [],
        [],
        [(lee.pk, mara.pk, "person")],
    ]
    # Each tag shows Mara as that memory left her (the first saw her still "other").
    tags = [[(t.id, t.name, t.kind, t.source) for t in r.entities.tags] if r.entities else None for r in results]
    assert tags == [
        [(mara.pk, "Mara", "other", "agent")],
        [(mara.pk, "Mara", "person", "agent")],
        [(mara.pk, "Mara", "person", "agent")],
        [(lee.pk, "Mara Lee", "other", "agent")],
    ]
    memories = [r.memory.pk for r in results if r.memory is not None]
    stored = set(MemoryEntity.objects.filter(palace=palace).values_list("memory_id", "entity_id", "source"))
    assert stored == {(m, mara.pk, "agent") for m in memories[:3]} | {(memories[3], lee.pk, "agent")}
    # The op rows, written after the links, record them as the results do.
    ops = {o.target_id: o.detail["entities"] for o in OpLog.objects.filter(op="memory.save", palace=palace)}
    assert [ops[m] for m in memories] == [r.entities.detail() for r in results if r.entities is not None]
    assert all(not r.entities.error for r in results if r.entities is not None)


def test_a_chunk_links_its_entities_as_one_at_a_time_would(alice_palace: Palace, alice_actor: Actor) -> None:
    calls: list[int] = []
    real = linking._resolve

    def counting(**kwargs: Any) -> Any:
        calls.append(len(kwargs["mentions"]))
        return real(**kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(linking, "_resolve", counting)
        results = _save(alice_palace, alice_actor)
    assert calls == [4]  # one resolution for the chunk's four memories
    _check(alice_palace, results)


def test_a_failed_chunk_resolution_links_one_at_a_time(alice_palace: Palace, alice_actor: Actor) -> None:
    calls: list[int] = []
    real = linking._resolve

    def refuses_batches(**kwargs: Any) -> Any:
        calls.append(len(kwargs["mentions"]))
        if len(kwargs["mentions"]) > 1:
            raise RuntimeError("a writer outside the lock created one of the names")
        return real(**kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(linking, "_resolve", refuses_batches)
        results = _save(alice_palace, alice_actor)
    assert calls == [4, 1, 1, 1, 1]  # the batch failed and rolled back; then each memory on its own
    _check(alice_palace, results)
