"""The fast refurb scan agrees with the reference rule (palace.placards.placard_score) placard by placard."""

from __future__ import annotations

from memory.models import Memory
from memory.selectors import refurb_list
from palace.models import Palace
from palace.placards import placard_score
from tests.fakes.memories import make_memory

PLACARDS = [
    ("fact", "Deploy freeze 2026-11"),
    ("fact", "deploy FREEZE  2026-11"),  # the same placard, case and spacing aside
    ("fact", "Deploy window"),  # clashes with the two above, undated
    ("fact", "Ｄｅｐｌｏｙ ｗｉｎｄｏｗ"),  # full width: the same placard as the one above after NFKC
    ("fact", "Straße plan Q3 2026"),
    ("fact", "STRASSE PLAN q3 2026"),  # casefold: ß is ss
    ("fact", "Release notes 30.11.2026"),
    ("fact", "Review on Nov 30"),
    ("fact", "Retro 3rd March"),
    ("fact", "Rollback drill"),
    ("fact", "   "),  # only whitespace: no placard at all, score 0
    ("decision", "Pick Postgres 2025"),
    ("decision", "Pick Redis"),  # clash, undated
    ("decision", "Budget FY2026.5"),  # no year on its own (followed by a dot), no other anchor
    ("decision", "部署窗口 2026年11月"),
    ("decision", "部署窗口的负责人"),  # clash with the one above, undated
    ("skill", "Restore a dump"),
    ("skill", "Restore a dump"),
    ("skill", "restore checklist 11月30日"),
    ("episode", "Standup notes"),
    ("preference", "Tabs over spaces"),
]


def reference(memories: list[Memory]) -> dict[int, float]:
    """Every memory scored against all the others, the slow and obvious way."""
    scores = {}
    for m in memories:
        others = [o for o in memories if o.pk != m.pk]
        room_others = [o.placard for o in others if o.slot.room_id == m.slot.room_id]
        scores[m.pk] = placard_score(
            placard=m.placard,
            room=m.slot.room.name,
            palace_placards=[o.placard for o in others],
            room_placards=room_others,
        ).score
    return scores


def test_scan_lists_and_counts_the_same_low_placards_as_the_reference_rule(palace: Palace) -> None:
    made = [make_memory(palace, content=f"m{i}", kind=k, placard=p) for i, (k, p) in enumerate(PLACARDS)]
    make_memory(palace, content="gone", placard="Tabs over spaces", status="forgotten")  # not counted
    expected = reference(made)
    low = {pk: s for pk, s in expected.items() if s < 0.7}
    result = refurb_list(palace=palace, limit=100)
    assert result.scanned and result.placarded == len(PLACARDS)
    assert {i.memory.pk: i.score.score for i in result.items} == low
    assert result.low == len(low)
    assert [i.score.score for i in result.items] == sorted(low.values())
    # A short list still counts every low placard.
    short = refurb_list(palace=palace, limit=3)
    assert len(short.items) == 3 and short.low == len(low)
    assert [i.memory.pk for i in short.items] == [i.memory.pk for i in result.items[:3]]
