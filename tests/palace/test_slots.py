"""Slotting: rooms by kind, capacity and overflow (op row + warning), never-recycled slots, inherited slots,
the tour route, and the idempotent backfill for memories without a slot."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from django.db import transaction
from django.test import override_settings

from memory.jobs import slots_backfill
from memory.lifecycle import memory_forget, memory_update
from memory.models import Memory
from memory.save import memory_save
from palace import slots as slots_module
from palace.actors import Actor
from palace.errors import InvalidInput
from palace.models import OpLog, Palace, Room, Slot, TourStop
from palace.slots import slot_assign
from palace.structure import room_rename, rooms_of, slot_neighbours, tour_route
from tests.fakes.memories import SYSTEM, make_memory


def test_each_kind_gets_its_own_room(palace: Palace) -> None:
    coords = {kind: make_memory(palace, kind=kind).slot.coordinate for kind in Memory.Kind.values}
    assert coords == {
        "fact": "Fact Hall#1",
        "preference": "Preference Pavilion#1",
        "decision": "Decision Chamber#1",
        "episode": "Episode Gallery#1",
        "skill": "Skill Workshop#1",
    }


def test_full_room_overflows_into_numbered_room_with_op_row_and_warning(palace: Palace) -> None:
    # Patched rather than read from caplog: other tests (a Celery worker, `atrium up`) reconfigure logging.
    with mock.patch.object(slots_module.log, "warning") as warning:
        slots = [make_memory(palace, content=f"fact {i}").slot for i in range(10)]
    assert [s.coordinate for s in slots[:9]] == [f"Fact Hall#{n}" for n in range(1, 10)]
    assert slots[9].coordinate == "Fact Hall-2#1"
    op = OpLog.objects.get(op="room.open")
    assert op.palace_id == palace.pk
    assert op.target_id == slots[9].room_id
    assert op.reason == "Fact Hall is full"
    assert "may rename" in op.detail["warning"]
    (call,) = warning.call_args_list
    assert "opened %s" in call.args[0] and "Fact Hall-2" in call.args
    # The first room of a kind is not an overflow: no op row for it.
    assert OpLog.objects.filter(op="room.open").count() == 1


@override_settings(ATRIUM_ROOM_CAPACITY=2)
def test_capacity_is_a_setting(palace: Palace) -> None:
    coords = [make_memory(palace).slot.coordinate for _ in range(5)]
    assert coords == ["Fact Hall#1", "Fact Hall#2", "Fact Hall-2#1", "Fact Hall-2#2", "Fact Hall-3#1"]
    assert OpLog.objects.filter(op="room.open", palace=palace).count() == 2


def test_forgotten_memory_keeps_its_slot_and_the_number_is_never_reused(palace: Palace, alice: Any) -> None:
    first = make_memory(palace, content="first")
    second = make_memory(palace, content="second")
    memory_forget(memory_id=first.pk, actor=Actor.for_user(alice), reason="wrong")
    first.refresh_from_db()
    assert first.status == "forgotten"
    assert first.slot.coordinate == "Fact Hall#1"  # the closed wing
    third = make_memory(palace, content="third")
    assert third.slot.number == 3
    assert second.slot.number == 2
    assert Slot.objects.filter(room=third.slot.room).count() == 3


def test_rooms_are_per_palace(palace: Palace, project: Palace) -> None:
    make_memory(palace)
    make_memory(palace)
    assert make_memory(project).slot.coordinate == "Fact Hall#1"


def test_correction_inherits_the_slot_of_what_it_replaces(palace: Palace, alice: Any) -> None:
    actor = Actor.for_user(alice)
    saved = memory_save(palace=palace, actor=actor, content="The staging database runs PostgreSQL 16.", kind="fact")
    make_memory(palace, content="something else entirely")
    corrected = memory_update(
        memory_id=saved.memory.pk, actor=actor, content="The staging database runs PostgreSQL 18."
    )
    assert corrected.pk != saved.memory.pk
    assert corrected.supersedes_id == saved.memory.pk
    assert corrected.slot_id == saved.memory.slot_id
    assert corrected.slot.coordinate == "Fact Hall#1"
    assert TourStop.objects.filter(palace=palace).count() == 2  # no new stop for the correction


def test_merge_keeps_the_existing_slot(palace: Palace, alice: Any) -> None:
    actor = Actor.for_user(alice)
    text = "Deploys to production happen on Tuesdays after the 10:00 stand-up."
    first = memory_save(palace=palace, actor=actor, content=text, kind="decision")
    again = memory_save(palace=palace, actor=actor, content=text, kind="decision")
    assert again.disposition == "merge"
    assert again.memory.pk == first.memory.pk
    assert Slot.objects.filter(palace=palace).count() == 1


def test_inheriting_a_slot_of_another_palace_is_refused(palace: Palace, project: Palace) -> None:
    foreign = make_memory(project).slot
    with pytest.raises(InvalidInput), transaction.atomic():
        slot_assign(palace=palace, kind="fact", actor=SYSTEM, inherit=foreign)


def test_unknown_kind_is_invalid_input(palace: Palace) -> None:
    with pytest.raises(InvalidInput, match="kind"), transaction.atomic():
        slot_assign(palace=palace, kind="rumour", actor=SYSTEM)


def test_tour_route_is_append_only_in_slot_order(palace: Palace) -> None:
    a = make_memory(palace, kind="fact")
    b = make_memory(palace, kind="skill")
    c = make_memory(palace, kind="fact")
    route = list(tour_route(palace=palace))
    assert [s.seq for s in route] == [1, 2, 3]
    assert [s.slot_id for s in route] == [a.slot_id, b.slot_id, c.slot_id]


def test_rooms_directory_order_and_counts(palace: Palace) -> None:
    make_memory(palace, kind="skill")
    make_memory(palace, kind="fact")
    make_memory(palace, kind="fact")
    rooms = rooms_of(palace=palace)
    assert [(r.name, r.slots_used) for r in rooms] == [("Fact Hall", 2), ("Skill Workshop", 1)]


def test_slot_neighbours_are_same_room_numbers_around(palace: Palace) -> None:
    slots = [make_memory(palace).slot for _ in range(4)]
    make_memory(palace, kind="skill")
    assert [s.number for s in slot_neighbours(slot=slots[1])] == [1, 3]
    assert [s.number for s in slot_neighbours(slot=slots[0], span=2)] == [2, 3]


def test_room_rename_changes_coordinates_and_is_logged(palace: Palace, alice: Any) -> None:
    memory = make_memory(palace)
    room = memory.slot.room
    room_rename(palace=palace, room=room, name="Infra facts", actor=Actor.for_user(alice))
    memory.refresh_from_db()
    assert memory.slot.coordinate == "Infra facts#1"
    assert OpLog.objects.filter(op="room.rename", target_id=room.pk).exists()
    with pytest.raises(InvalidInput):
        room_rename(palace=palace, room=room, name="bad#name", actor=Actor.for_user(alice))


def test_overflow_numbering_skips_a_name_a_person_took(palace: Palace, alice: Any) -> None:
    with override_settings(ATRIUM_ROOM_CAPACITY=1):
        first = make_memory(palace)
        room_rename(palace=palace, room=first.slot.room, name="Fact Hall-2", actor=Actor.for_user(alice))
        second = make_memory(palace)
    assert second.slot.room.ordinal == 2
    assert second.slot.room.name == "Fact Hall-3"


def test_slot_backfill_is_idempotent_and_follows_supersede_chains(palace: Palace) -> None:
    old = make_memory(palace, content="old", slotted=False)
    newer = make_memory(palace, content="newer", slotted=False, supersedes=old)
    other = make_memory(palace, content="other", kind="skill", slotted=False)
    assert slots_backfill() == 3
    for m in (old, newer, other):
        m.refresh_from_db()
    assert old.slot.coordinate == "Fact Hall#1"
    assert newer.slot_id == old.slot_id
    assert other.slot.coordinate == "Skill Workshop#1"
    op = OpLog.objects.get(op="slots.backfill")
    assert op.detail == {"count": 3}
    assert slots_backfill() == 0
    assert OpLog.objects.filter(op="slots.backfill").count() == 1
    assert Room.objects.filter(palace=palace).count() == 2


def test_backfill_slots_command(palace: Palace) -> None:
    from io import StringIO

    from django.core.management import call_command

    make_memory(palace, slotted=False)
    out = StringIO()
    call_command("backfill_slots", stdout=out)
    assert out.getvalue().strip() == "slotted 1 memories"
    out = StringIO()
    call_command("backfill_slots", stdout=out)
    assert out.getvalue().strip() == "slotted 0 memories"
