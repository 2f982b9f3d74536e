"""The read selectors every door uses: one memory, pages of memories (newest first and along the route, with the
one cursor format), the supersede chain, a memory's edges and op rows, episodes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from memory.lifecycle import memory_forget, memory_update
from memory.models import Edge, Memory
from memory.save import SaveResult
from memory.selectors import memories as selectors
from palace.actors import Actor
from palace.errors import InvalidInput, NotFound, PermissionDenied
from palace.models import Palace
from tests.fakes.memories import T0, make_memory

Save = Callable[..., SaveResult]


@pytest.fixture
def fact(save: Save) -> Memory:
    result = save("The API server listens on port 8000.", placard="API port")
    assert result.memory is not None
    return result.memory


def test_memory_get_hides_other_palaces(fact: Memory, alice: Any, charlie: Any) -> None:
    assert selectors.memory_get(user=alice, memory_id=fact.pk).pk == fact.pk
    with pytest.raises(NotFound):
        selectors.memory_get(user=charlie, memory_id=fact.pk)
    with pytest.raises(NotFound):
        selectors.memory_get(user=alice, memory_id=999_999)


def test_memory_list_filters_and_pages(save: Save, alice: Any, charlie: Any, project: Palace) -> None:
    texts = [f"Service number {i} listens on port {8000 + i * 17} in rack {i}." for i in range(7)]
    ids = [r.memory.pk for r in (save(t) for t in texts) if r.memory is not None]
    decision = save("Pull requests need one review before merging.", kind="decision", palace=project)
    assert decision.memory is not None
    page = selectors.memory_list(user=alice, limit=3)
    assert [m.pk for m in page.items] == [decision.memory.pk, ids[6], ids[5]]
    seen = [m.pk for m in page.items]
    while page.next_cursor:
        page = selectors.memory_list(user=alice, limit=3, cursor=page.next_cursor)
        seen += [m.pk for m in page.items]
    assert seen == [decision.memory.pk, *reversed(ids)]
    assert [m.pk for m in selectors.memory_list(user=alice, kind="decision").items] == [decision.memory.pk]
    assert [m.pk for m in selectors.memory_list(user=alice, room="Decision Chamber").items] == [decision.memory.pk]
    assert len(selectors.memory_list(user=alice, palaces=[project]).items) == 1
    assert selectors.memory_list(user=charlie).items == []  # an outsider sees none of it
    memory_forget(memory_id=ids[0], actor=Actor.for_user(alice))
    assert [m.pk for m in selectors.memory_list(user=alice, status="forgotten").items] == [ids[0]]
    assert len(selectors.memory_list(user=alice, status=None).items) == 8
    with pytest.raises(InvalidInput):
        selectors.memory_list(user=alice, cursor="garbage!")
    with pytest.raises(InvalidInput):
        selectors.memory_list(user=alice, limit=0)


def test_supersede_chain_and_sources(fact: Memory, alice: Any, alice_actor: Actor, save: Save) -> None:
    save("The API server runs on port 8000.", placard="API port", source_turn="t2")
    second = memory_update(memory_id=fact.pk, actor=alice_actor, content="The API listens on port 9000.")
    third = memory_update(memory_id=second.pk, actor=alice_actor, content="The API listens on port 9100.")
    chain = [m.pk for m in selectors.memory_supersede_chain(user=alice, memory_id=second.pk)]
    assert chain == [third.pk, second.pk, fact.pk]
    sources = selectors.memory_sources(user=alice, memory_id=fact.pk)
    assert [s["turn"] for s in sources] == ["", "t2"]


def test_memory_get_for_writing_refuses_a_viewer(alice: Any, bob: Any, charlie: Any, project: Palace) -> None:
    memory = make_memory(project, "The demo deploys on Fridays.")
    assert selectors.memory_get(user=bob, memory_id=memory.pk).pk == memory.pk  # a viewer reads it
    with pytest.raises(PermissionDenied):
        selectors.memory_get(user=bob, memory_id=memory.pk, write=True)
    with pytest.raises(NotFound):
        selectors.memory_get(user=charlie, memory_id=memory.pk, write=True)
    assert selectors.memory_get(user=alice, memory_id=memory.pk, write=True).pk == memory.pk  # control: the owner


def test_route_order_pages_along_the_tour_with_its_own_cursor(alice: Any, alice_palace: Palace) -> None:
    made = [make_memory(alice_palace, f"memory {i}", kind=("fact", "skill")[i % 2]) for i in range(7)]
    make_memory(alice_palace, "not on the route", slotted=False)
    page = selectors.memory_list(user=alice, palaces=[alice_palace], order="route", limit=3, slim=True)
    seen = [m.pk for m in page.items]
    while page.next_cursor:
        assert selectors.cursor_ok(page.next_cursor, order="route")
        assert not selectors.cursor_ok(page.next_cursor, order="new")  # one format per order
        page = selectors.memory_list(
            user=alice, palaces=[alice_palace], order="route", limit=3, cursor=page.next_cursor, slim=True
        )
        seen += [m.pk for m in page.items]
    assert seen == [m.pk for m in made]  # route order is slot order: the order they were placed
    with pytest.raises(InvalidInput):
        selectors.memory_list(user=alice, order="route", cursor="garbage!")
    with pytest.raises(InvalidInput):
        selectors.memory_list(user=alice, order="sideways")


def test_newest_first_across_palaces_with_an_id_filter_and_slim_rows(
    alice: Any, alice_palace: Palace, project: Palace
) -> None:
    mine = [make_memory(alice_palace, f"mine {i}", created_at=T0 + timedelta(minutes=2 * i)) for i in range(3)]
    shared = [make_memory(project, f"shared {i}", created_at=T0 + timedelta(minutes=2 * i + 1)) for i in range(3)]
    everything = selectors.memory_list(user=alice, palaces=[alice_palace, project], limit=4, slim=True)
    assert [m.content for m in everything.items] == ["shared 2", "mine 2", "shared 1", "mine 1"]
    rest = selectors.memory_list(user=alice, palaces=[alice_palace, project], cursor=everything.next_cursor)
    assert [m.content for m in rest.items] == ["shared 0", "mine 0"] and rest.next_cursor is None
    wanted = [mine[0].pk, shared[2].pk]
    picked = selectors.memory_list(user=alice, palaces=[alice_palace, project], ids=wanted)
    assert [m.pk for m in picked.items] == [shared[2].pk, mine[0].pk]
    assert "embedding" in everything.items[0].get_deferred_fields()  # slim: the vector is not loaded
    assert "embedding" not in rest.items[0].get_deferred_fields()  # control: a full row has it


def test_chain_walks_both_ways_within_a_depth(alice_palace: Palace) -> None:
    first = make_memory(alice_palace, "v1", status="superseded")
    second = make_memory(alice_palace, "v2", status="superseded", supersedes=first)
    third = make_memory(alice_palace, "v3", supersedes=second)
    chain = selectors.memory_chain(memory=second)
    assert [m.pk for m in chain.older] == [first.pk] and [m.pk for m in chain.newer] == [third.pk]
    assert chain.ids == [third.pk, second.pk, first.pk]
    assert selectors.memory_successor_id(memory=second) == third.pk
    assert selectors.memory_successor_id(memory=third) is None
    short = selectors.memory_chain(memory=third, depth=1)
    assert [m.pk for m in short.older] == [second.pk]  # one step back, not two


def test_edges_of_a_memory_newest_first_optionally_of_one_kind(alice_palace: Palace) -> None:
    a, b, c = (make_memory(alice_palace, x) for x in "abc")
    Edge.objects.create(palace=alice_palace, from_memory=a, to_memory=b, kind="supports")
    Edge.objects.create(palace=alice_palace, from_memory=c, to_memory=a, kind="contradicts", status="pending")
    assert [e.kind for e in selectors.memory_edges(memory=a)] == ["contradicts", "supports"]
    only = selectors.memory_edges(memory=a, kind="contradicts", limit=None)
    assert [(e.from_memory_id, e.to_memory_id) for e in only] == [(c.pk, a.pk)]
    assert selectors.memory_edges(memory=a, limit=1)[0].kind == "contradicts"


def test_op_rows_of_a_memory_cover_its_whole_chain(fact: Memory, alice_actor: Actor) -> None:
    newer = memory_update(memory_id=fact.pk, actor=alice_actor, content="The API server listens on port 9000.")
    memory_forget(memory_id=newer.pk, actor=alice_actor, reason="moved")
    chain = selectors.memory_chain(memory=fact)
    ops = selectors.memory_ops(chain=chain)
    assert [(o.op, o.target_id) for o in ops] == [
        ("memory.forget", newer.pk),
        ("memory.update", newer.pk),
        ("memory.save", fact.pk),
    ]


def test_episode_groups_page_with_the_shared_cursor(alice_palace: Palace) -> None:
    for session in range(3):
        for turn in range(2):
            made = make_memory(alice_palace, f"s{session} t{turn}", kind="episode")
            Memory.objects.filter(pk=made.pk).update(
                source_session=f"s{session}", occurred_at=T0 + timedelta(hours=session, minutes=turn)
            )
    groups, cursor = selectors.episode_groups(palace_ids=[alice_palace.pk], groups=2)
    assert [g.session for g in groups] == ["s2", "s1"] and [m.content for m in groups[0].entries] == ["s2 t0", "s2 t1"]
    assert selectors.cursor_ok(cursor, order="episodes")
    more, end = selectors.episode_groups(palace_ids=[alice_palace.pk], groups=2, cursor=cursor)
    assert [g.session for g in more] == ["s0"] and end == ""
    with pytest.raises(InvalidInput):
        selectors.episode_groups(palace_ids=[alice_palace.pk], cursor="not-a-cursor")
