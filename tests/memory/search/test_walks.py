"""Walks: neighbours over edges (1–3 hops), fixed and thematic tours, today's stretch of the route."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import Edge, Memory
from memory.providers import embed_passages
from memory.search import edge_neighbours, tour_fixed, tour_stretch, tour_thematic
from memory.text import build_embedding_text
from palace.errors import InvalidInput
from palace.models import Palace
from tests.fakes.memories import make_memory


def edge(a: Memory, b: Memory, kind: str = "related", status: str = "") -> Edge:
    return Edge.objects.create(palace=a.palace, from_memory=a, to_memory=b, kind=kind, status=status)


def test_neighbours_walk_one_to_three_hops_both_directions(palace: Palace) -> None:
    a, b, c, d, e = (make_memory(palace, content=x) for x in "abcde")
    edge(a, b, "supports")
    edge(c, b, "refines")  # reached from b against the edge direction
    edge(c, d)
    edge(d, e)
    one = edge_neighbours(memory=a, hops=1)
    assert [(n.memory.pk, n.hops, n.via, n.direction) for n in one] == [(b.pk, 1, "supports", "out")]
    two = edge_neighbours(memory=a, hops=2)
    assert [(n.memory.pk, n.hops) for n in two] == [(b.pk, 1), (c.pk, 2)]
    assert two[1].direction == "in" and two[1].from_id == b.pk
    three = edge_neighbours(memory=a, hops=3)
    assert [(n.memory.pk, n.hops) for n in three] == [(b.pk, 1), (c.pk, 2), (d.pk, 3)]


def test_neighbours_skip_dismissed_edges_and_forgotten_memories(palace: Palace) -> None:
    a, b, c = (make_memory(palace, content=x) for x in "abc")
    gone = make_memory(palace, content="gone", status="forgotten")
    edge(a, b, "contradicts", status="dismissed")
    edge(a, c, "contradicts", status="pending")
    edge(a, gone)
    assert [n.memory.pk for n in edge_neighbours(memory=a, hops=3)] == [c.pk]


def test_neighbours_reject_more_than_three_hops(palace: Palace) -> None:
    a = make_memory(palace)
    with pytest.raises(InvalidInput, match="hops"):
        edge_neighbours(memory=a, hops=4)
    with pytest.raises(InvalidInput, match="hops"):
        edge_neighbours(memory=a, hops=0)


def test_fixed_tour_walks_slots_in_route_order_showing_what_each_holds_now(palace: Palace) -> None:
    a = make_memory(palace, content="a")
    b = make_memory(palace, content="b", kind="skill")
    c = make_memory(palace, content="c")
    a.status = "superseded"
    a.save()
    a2 = make_memory(palace, content="a corrected", supersedes=a)
    gone = make_memory(palace, content="gone", status="forgotten")
    tour = tour_fixed(palace=palace)
    assert tour.mode == "fixed"
    assert [(s.seq, s.coordinate, s.memory.pk) for s in tour.stops] == [
        (1, "Fact Hall#1", a2.pk),
        (2, "Skill Workshop#1", b.pk),
        (3, "Fact Hall#2", c.pk),
    ]
    assert tour.total == 3
    closed = tour_fixed(palace=palace, include_closed=True)
    assert [s.memory.pk for s in closed.stops] == [a2.pk, b.pk, c.pk, gone.pk]
    page = tour_fixed(palace=palace, offset=1, limit=1)
    assert [s.memory.pk for s in page.stops] == [b.pk]
    assert page.total == 3


def test_stretch_counts_stops_like_the_fixed_tour(palace: Palace, charlie: Any) -> None:
    """A closed slot is on the route but not a stop: the stretch skips it and its `total` is tour_fixed's; its
    first and last are route positions out of the route's length."""
    from datetime import date

    made = [make_memory(palace, content=f"fact {i}") for i in range(10)]
    for closed in (made[1], made[2], made[7]):
        Memory.objects.filter(pk=closed.pk).update(status="forgotten")
    day = date(2026, 11, 3)
    stretch = tour_stretch(palace=palace, today=day, length=4)
    assert stretch.total == tour_fixed(palace=palace).total == 7
    assert stretch.route_length == 10
    assert len(stretch.stops) == 4 and all(s.memory is not None for s in stretch.stops)
    assert all(s.memory.status == "active" for s in stretch.stops if s.memory is not None)
    seqs = [s.seq for s in stretch.stops]
    open_seqs = [s.seq for s in tour_fixed(palace=palace).stops]
    start = open_seqs.index(seqs[0])
    assert seqs == open_seqs[start : start + 4]  # consecutive stops of the walk
    assert (stretch.first, stretch.last) == (seqs[0], seqs[-1])
    assert 2 not in seqs and 3 not in seqs and 8 not in seqs  # closed slots are never stops
    assert tour_stretch(palace=palace, today=day, length=4).stops == stretch.stops  # the same all day
    empty = tour_stretch(palace=Palace.objects.get(personal_owner=charlie), today=day)
    assert (empty.total, empty.stops, empty.route_length) == (0, [], 0)


TOPICS = [
    ("fact", "Nightly database backups run at 02:00 with pg_dump to the S3 bucket."),
    ("preference", "Alice prefers tabs over spaces in Go code."),
    ("decision", "We restore database backups weekly to verify them, on Fridays."),
    ("fact", "The office coffee machine is on the third floor."),
    ("skill", "To restore a backup: pg_restore --clean into a fresh database, then run migrations."),
    ("episode", "On Monday the frontend build broke because of a stale lockfile."),
    ("fact", "Backup retention is 30 days for daily dumps and a year for monthly ones."),
    ("preference", "Bob likes his reviews short."),
]


def test_thematic_tour_plans_stops_around_a_theme_in_route_order(palace: Palace, alice: Any) -> None:
    vectors = embed_passages([build_embedding_text(content=text) for _, text in TOPICS])
    made = [make_memory(palace, content=t, kind=k, embedding=v) for (k, t), v in zip(TOPICS, vectors, strict=True)]
    tour = tour_thematic(user=alice, palace=palace, theme="database backups and restoring them", stops=4)
    assert tour.mode == "thematic"
    assert tour.search_mode == "hybrid"
    assert len(tour.stops) == 4
    seqs = [s.seq for s in tour.stops]
    assert seqs == sorted(seqs)  # walked in route order, not score order
    backup_ids = {made[i].pk for i in (0, 2, 4, 6)}
    assert {s.memory.pk for s in tour.stops} == backup_ids
    assert tour.note == ""


def test_thematic_tour_needs_three_to_seven_stops_and_a_theme(palace: Palace, alice: Any) -> None:
    with pytest.raises(InvalidInput, match="3 to 7"):
        tour_thematic(user=alice, palace=palace, theme="x", stops=2)
    with pytest.raises(InvalidInput, match="3 to 7"):
        tour_thematic(user=alice, palace=palace, theme="x", stops=8)
    with pytest.raises(InvalidInput, match="theme"):
        tour_thematic(user=alice, palace=palace, theme="   ", stops=3)


def test_thematic_tour_says_when_too_few_memories_match(palace: Palace, alice: Any) -> None:
    text = "Nightly database backups run at 02:00 with pg_dump."
    make_memory(palace, content=text, embedding=embed_passages([text])[0])
    tour = tour_thematic(user=alice, palace=palace, theme="database backups", stops=3)
    assert len(tour.stops) == 1
    assert "only 1" in tour.note
