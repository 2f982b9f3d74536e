"""What a bulk save costs in database round trips: a chunk asks once what a save asks per item (the palace lock,
the rooms and tour a slot is counted from, each session's previous memory, the rulings' pruning, the neighbour
scan's setting, the entities its items name), writes its op rows, `next` edges, entity links, slots and tour stops
in one insert each, and takes no savepoint an item unless an
item fails, so a chunk's queries per item stay under a pinned bound while every step still writes its rows."""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.models import Adjudication, Edge, Memory
from memory.save import (
    SaveItem,
    SaveResult,
    derive_texts,
    embed_texts,
    memory_chunk_embed,
    memory_chunk_prepare,
    memory_chunk_save,
    memory_save_bulk,
)
from palace.actors import Actor
from palace.models import OpLog, Palace, Room, TourStop

# Measured for this chunk: 187 queries when every item asked for itself (18.7 an item), then 109 (10.9), 68 (6.8: op
# rows and edges one insert each, the scan set once, no savepoint an item), 47 now (4.7: entity links, slots and
# tour stops one insert each for the chunk), 29 now (2.9: the memories one insert and the neighbours one search
# statement for the chunk, memory/save/pending.py).
MAX_QUERIES_PER_ITEM = 3

_TOPICS = (
    "The billing service moved to PostgreSQL 16 because the replica lagged.",
    "Mara reviews every pull request of the search service the same day.",
    "The staging database of the auth service listens on port 6543.",
    "Integration tests of the ingest service run with maxfail set to three.",
    "The gateway deploy window is Thursday at ten in the morning.",
)


def test_a_chunk_costs_few_queries_per_item_and_still_writes_every_step(
    alice_palace: Palace, alice_actor: Actor
) -> None:
    items = [
        SaveItem(content=text, kind="episode", source_session="s-1", source_turn=str(i), speaker="user")
        for i, text in enumerate(_TOPICS)
    ] + [SaveItem(content=f"We decided that from now on: {text}", kind="decision") for text in _TOPICS]

    with CaptureQueriesContext(connection) as queries:
        results = memory_save_bulk(
            palace=alice_palace, actor=alice_actor, items=items, source="backfill", chunk_items=10
        ).items

    assert all(isinstance(r, SaveResult) and r.memory is not None for r in results), results
    assert len(queries) <= MAX_QUERIES_PER_ITEM * len(items), len(queries)
    # Every step still wrote its rows: the memories, slotted in order and on the tour, the session's next edges,
    # an op row each.
    memories = list(Memory.objects.filter(palace=alice_palace).order_by("id"))
    assert len(memories) == 10
    episodes = [m for m in memories if m.kind == "episode"]
    assert [m.slot.number for m in episodes] == [1, 2, 3, 4, 5]
    tour = list(TourStop.objects.filter(palace=alice_palace).order_by("seq").values_list("slot_id", flat=True))
    assert tour == [m.slot_id for m in memories]
    nexts = Edge.objects.filter(palace=alice_palace, kind=Edge.Kind.NEXT).order_by("id")
    assert [(e.from_memory_id, e.to_memory_id) for e in nexts] == [
        (a.pk, b.pk) for a, b in zip(episodes, episodes[1:], strict=False)
    ]
    ops = OpLog.objects.filter(op="memory.save", palace=alice_palace).order_by("id")
    assert [o.target_id for o in ops] == [m.pk for m in memories]  # one each, in the order of the saves


def test_a_chunk_prepared_ahead_with_a_stale_context_gets_the_right_one(
    alice_palace: Palace, alice_actor: Actor
) -> None:
    # A backfill prepares its next batch with the context it expects (the session's last item in this batch); when
    # that is not what the session's latest memory turned out to be, the item's texts are derived again before it
    # is written (the search text carries the previous turn).
    latest = memory_save_bulk(
        palace=alice_palace,
        actor=alice_actor,
        items=[SaveItem(content=_TOPICS[0], kind="episode", source_session="s-1", source_turn="0")],
        source="backfill",
    ).items[0]
    assert isinstance(latest, SaveResult) and latest.memory is not None
    item = SaveItem(content=_TOPICS[1], kind="episode", source_session="s-1", source_turn="1")
    chunk = memory_chunk_prepare(palace=alice_palace, items=[item], now=timezone.now(), context={"s-1": _TOPICS[4]})
    memory_chunk_embed(chunk)
    p = chunk.prepared[0][1]
    assert "thursday" in chunk.texts[0][0] and "postgresql" not in chunk.texts[0][0]  # the control: stale context

    (result,) = memory_chunk_save(palace=alice_palace, actor=alice_actor, chunk=chunk, source="backfill")

    assert isinstance(result, SaveResult) and result.memory is not None
    stored = Memory.objects.get(pk=result.memory.pk)
    assert stored.search_text == derive_texts(p, _TOPICS[0])[0]
    assert "postgresql" in stored.search_text and "thursday" not in stored.search_text
    (vector,), _ = embed_texts([derive_texts(p, _TOPICS[0])[1]])
    assert np.allclose(np.asarray(stored.embedding), vector, atol=1e-6)
    assert Edge.objects.filter(from_memory=latest.memory, to_memory=stored, kind=Edge.Kind.NEXT).exists()


def test_rooms_a_chunk_opens_cost_two_queries_each_and_are_logged_before_their_memories(
    alice_palace: Palace, project: Palace, alice_actor: Actor, settings: Any
) -> None:
    # The same ten decisions in two empty palaces: one whose rooms hold them all, one whose rooms hold two each, so
    # the chunk opens four more rooms. Each opening asks whether its name is free and inserts the room; the full
    # room's name is the one the allocator holds, and the room.open op rows wait for the chunk's end (one insert).
    items = [SaveItem(content=f"We decided that from now on: {text}", kind="decision") for text in _TOPICS * 2]
    items = [SaveItem(content=f"{item.content} (number {i})", kind="decision") for i, item in enumerate(items)]

    def save_into(palace: Palace) -> int:
        with CaptureQueriesContext(connection) as queries:
            results = memory_save_bulk(palace=palace, actor=alice_actor, items=items, source="backfill").items
        assert all(isinstance(r, SaveResult) and r.memory is not None for r in results), results
        return len(queries)

    settings.ATRIUM_ROOM_CAPACITY = 100
    roomy = save_into(alice_palace)
    settings.ATRIUM_ROOM_CAPACITY = 2
    cramped = save_into(project)

    rooms = list(
        Room.objects.filter(palace=project, kind="decision").order_by("ordinal").values_list("name", flat=True)
    )
    assert rooms == ["Decision Chamber", *(f"Decision Chamber-{n}" for n in range(2, 6))]
    assert cramped - roomy <= 2 * 4 + 1, (
        roomy,
        cramped,
    )  # was 5 a room: its full neighbour's name read twice, an op row each
    opened = list(OpLog.objects.filter(op="room.open", palace=project).order_by("id"))
    assert [(o.detail["room"], o.reason) for o in opened] == [
        (rooms[n], f"{rooms[n - 1]} is full") for n in range(1, 5)
    ]
    first_save = OpLog.objects.filter(op="memory.save", palace=project).order_by("id").first()
    assert first_save is not None and all(o.pk < first_save.pk for o in opened)
    saved = Memory.objects.filter(palace=project).order_by("id")
    assert [(m.slot.room.name, m.slot.number) for m in saved] == [(rooms[i // 2], i % 2 + 1) for i in range(10)]
    assert not OpLog.objects.filter(op="room.open", palace=alice_palace).exists()  # control: no room opened there


def test_a_chunks_contradictions_and_rulings_are_one_insert_each_with_their_ids_known_at_once(
    alice_palace: Palace, alice_actor: Actor
) -> None:
    ports = [f"The {name} service listens on port 80{n}." for n, name in enumerate(("billing", "search", "auth"))]
    memory_save_bulk(palace=alice_palace, actor=alice_actor, items=[SaveItem(content=t, kind="fact") for t in ports],
                     source="backfill")  # fmt: skip
    changed = [SaveItem(content=t.replace(" port 80", " port 90"), kind="fact") for t in ports]

    with CaptureQueriesContext(connection) as queries:
        results = memory_save_bulk(palace=alice_palace, actor=alice_actor, items=changed, source="backfill").items

    inserts = [q["sql"].split("(")[0] for q in queries if q["sql"].startswith("INSERT")]
    assert inserts.count('INSERT INTO "memory_edge" ') == 1 and inserts.count('INSERT INTO "memory_adjudication" ') == 1
    assert all(isinstance(r, SaveResult) and r.disposition == "defer" and len(r.edges) == 1 for r in results)
    for result in results:
        assert isinstance(result, SaveResult) and result.memory is not None
        edge = Edge.objects.get(pk=result.edges[0])  # the id the save reported is the row's
        assert (edge.kind, edge.status, edge.from_memory_id) == ("contradicts", "pending", result.memory.pk)
        ruling = Adjudication.objects.get(edge=edge)
        assert ruling.new_memory_id == result.memory.pk and ruling.contradiction and ruling.fallback_reason == "bulk"
        op = OpLog.objects.get(op="memory.save", target_id=result.memory.pk)
        assert op.detail["edges"] == result.edges
