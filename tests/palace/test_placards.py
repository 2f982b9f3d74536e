"""Placard scoring (unique +0.4, dated +0.3, no 6-character prefix clash in the room +0.3) and the refurb list."""

from __future__ import annotations

import pytest

from memory.selectors.refurb import placard_score_in_palace, refurb_list
from palace.models import Palace
from palace.placards import has_date_anchor, placard_score
from tests.fakes.memories import make_memory


@pytest.mark.parametrize(
    ("placard", "palace_others", "room_others", "score"),
    [
        ("Deploy freeze 2026-11", [], [], 1.0),
        ("Deploy freeze", [], [], 0.7),  # unique, distinct prefix, undated
        ("Deploy freeze 2026-11", ["deploy   FREEZE 2026-11"], ["deploy   FREEZE 2026-11"], 0.3),  # a duplicate
        ("Deploy freeze 2026-11", [], ["Deploy window Q3"], 0.7),  # "deploy" clashes in the room
        ("Deploy freeze", [], ["Deploy window"], 0.4),
        ("Deploy freeze", ["Deploy freeze"], ["Deploy freeze"], 0.0),
        ("", [], [], 0.0),
        ("Ｄｅｐｌｏｙ freeze", ["deploy freeze"], [], 0.3),  # full-width compares equal (NFKC)
    ],
)
def test_placard_score_table(placard: str, palace_others: list[str], room_others: list[str], score: float) -> None:
    assert placard_score(placard=placard, palace_placards=palace_others, room_placards=room_others).score == score


def test_a_clash_outside_the_room_does_not_count() -> None:
    # The room list is what the caller gathered from the same room; the palace list only decides uniqueness.
    result = placard_score(placard="Deploy freeze", palace_placards=["Deploy window"], room_placards=[])
    assert result.score == 0.7
    assert result.unique and result.distinct_prefix and not result.dated


@pytest.mark.parametrize(
    "text",
    [
        "release 2026-11-30",
        "30.11.2026 cutover",
        "Nov 2026 migration",
        "since 3 March",
        "Q3 2026 plan",
        "in 2025",
        "2026年11月 发布",
        "11月30日 冻结",
    ],
)
def test_date_anchors(text: str) -> None:
    assert has_date_anchor(text)


@pytest.mark.parametrize("text", ["deploy freeze", "PostgreSQL 16", "port 8000", "v1.2.3", "may we proceed"])
def test_not_date_anchors(text: str) -> None:
    assert not has_date_anchor(text)


def test_hints_say_what_to_fix() -> None:
    result = placard_score(placard="Deploy freeze", palace_placards=["deploy freeze"], room_placards=["Deploy window"])
    assert result.needs_refurb
    assert "same placard" in result.hint
    assert "date anchor" in result.hint
    assert "'Deploy window'" in result.hint
    assert placard_score(placard="", palace_placards=[], room_placards=[]).hint.startswith("add a placard")


def test_palace_with_fewer_than_8_active_memories_is_not_scanned(palace: Palace) -> None:
    for i in range(7):
        make_memory(palace, content=f"m{i}", placard="same placard")
    make_memory(palace, content="gone", placard="same placard", status="forgotten")
    result = refurb_list(palace=palace)
    assert result.scanned is False
    assert "7 active" in result.reason
    assert result.items == []
    # The eighth active memory makes it scannable, and then every duplicate shows up.
    make_memory(palace, content="m7", placard="same placard")
    result = refurb_list(palace=palace)
    assert result.scanned is True
    assert len(result.items) == 8


def test_refurb_list_holds_low_scores_only_worst_first_with_hints(palace: Palace) -> None:
    good = [make_memory(palace, content=f"g{i}", placard=f"Topic{i} decided 2026-0{i + 1}") for i in range(6)]
    dup_a = make_memory(palace, content="a", placard="Release train 2026-11")
    dup_b = make_memory(palace, content="b", placard="release TRAIN 2026-11")
    clash = make_memory(palace, content="c", placard="Release notes owner")  # prefix "releas" clashes in Fact Hall
    make_memory(palace, content="d", placard="")  # no placard: counted, not listed
    other_room = make_memory(palace, content="e", placard="Release checklist", kind="skill")  # own room: no clash
    result = refurb_list(palace=palace)
    assert result.scanned
    assert result.placarded == 10
    listed = {i.memory.pk: i for i in result.items}
    assert set(listed) == {dup_a.pk, dup_b.pk, clash.pk}
    assert [i.score.score for i in result.items] == [0.3, 0.3, 0.4]
    assert listed[clash.pk].coordinate.startswith("Fact Hall")
    assert "begin with a different word" in listed[clash.pk].score.hint
    assert all(g.pk not in listed for g in good)
    assert other_room.pk not in listed


def test_archived_and_forgotten_placards_do_not_count_against_active_ones(palace: Palace) -> None:
    for i in range(8):
        make_memory(palace, content=f"g{i}", placard=f"Card{i} 2026-01-0{i + 1}")
    make_memory(palace, content="old", placard="Card0 2026-01-01", status="archived")
    assert refurb_list(palace=palace).items == []


def test_score_one_placard_at_write_time(palace: Palace) -> None:
    existing = make_memory(palace, placard="Backup policy 2026-10")
    room = existing.slot.room
    assert placard_score_in_palace(palace=palace, placard="Backup policy 2026-10", room=room).score == 0.3
    assert (
        placard_score_in_palace(palace=palace, placard="Backup policy 2026-10", room=room, exclude_id=existing.pk).score
        == 1.0
    )
    assert placard_score_in_palace(palace=palace, placard="Backups of mail", room=room).score == 0.4  # "backup"
    assert placard_score_in_palace(palace=palace, placard="Mail backups", room=room).score == 0.7
    assert placard_score_in_palace(palace=palace, placard="Backups of mail", room=None).score == 0.7
