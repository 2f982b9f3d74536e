"""Rooms: the room directory and its bounded forms (the newest rooms per kind, a page of one kind)."""

from __future__ import annotations

from memory.selectors import room_directory, room_directory_head, room_directory_page
from palace.models import Palace
from tests.fakes.memories import make_memory


def test_room_directory_counts_slots_and_shows_the_latest_placard(palace: Palace) -> None:
    from datetime import timedelta

    from tests.fakes.memories import T0

    make_memory(palace, placard="Old placard", created_at=T0)
    make_memory(palace, placard="Newest placard", created_at=T0 + timedelta(days=2))
    make_memory(palace, placard="", created_at=T0 + timedelta(days=3))  # no placard: skipped
    make_memory(palace, placard="Forgotten one", status="forgotten", created_at=T0 + timedelta(days=4))
    make_memory(palace, kind="skill", placard="Bisect a regression")
    rooms = room_directory(palace=palace)
    assert [(r.name, r.slots_used, r.active, r.latest_placard) for r in rooms] == [
        ("Fact Hall", 4, 3, "Newest placard"),
        ("Skill Workshop", 1, 1, "Bisect a regression"),
    ]


def test_room_directory_of_an_empty_palace_is_empty(palace: Palace) -> None:
    assert room_directory(palace=palace) == []


def test_the_bounded_directory_forms_agree_with_the_whole_directory(palace: Palace) -> None:
    """The newest rooms of each kind (Today) and a page of one kind (the directory pages) carry the same figures
    as room_directory; only which rooms they hold differs."""
    from datetime import timedelta

    from palace.models import Room
    from tests.fakes.memories import T0

    make_memory(palace, placard="Old placard", created_at=T0)
    make_memory(palace, placard="Newest placard", created_at=T0 + timedelta(days=2))
    make_memory(palace, placard="Forgotten one", status="forgotten", created_at=T0 + timedelta(days=4))
    make_memory(palace, kind="skill", placard="Bisect a regression")
    for ordinal in (2, 3, 4):  # three more, empty fact rooms
        Room.objects.create(palace=palace, kind="fact", name=f"Fact Hall-{ordinal}", ordinal=ordinal, capacity=9)
    whole = {r.id: r for r in room_directory(palace=palace)}

    head = room_directory_head(palace=palace, per_kind=2)
    assert [(k.kind, k.rooms, k.memories, [r.name for r in k.newest]) for k in head] == [
        ("fact", 4, 2, ["Fact Hall-4", "Fact Hall-3"]),
        ("skill", 1, 1, ["Skill Workshop"]),
    ]
    first, cursor = room_directory_page(palace=palace, kind="fact", limit=3)
    rest, end = room_directory_page(palace=palace, kind="fact", after=cursor, limit=3)
    assert [r.ordinal for r in first + rest] == [1, 2, 3, 4] and end is None
    for entry in [*first, *rest, *(r for k in head for r in k.newest)]:
        assert entry == whole[entry.id]
    assert whole[first[0].id].latest_placard == "Newest placard"  # control: the figures are not all empty
