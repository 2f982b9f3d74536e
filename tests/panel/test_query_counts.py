"""Every list view and list region costs a fixed number of queries, whatever the number of rows (pinned at two
sizes). Today's cached regions are counted cold (the first render after a write)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from memory.models import Edge, Memory
from palace.models import Room

# Queries per view: 3 for the frame (session, user, the scope's memberships); a full page adds the due badge (3);
# a memory or room by id adds one (read through the palaces the user may read, memory.selectors.memory_get and
# palace.structure.room_visible).
PINNED = {
    "/today/": 14,  # frame + badge + summary (2) + due queue (3) + when none is due, the next to come due (3)
    "/today/?part=tour": 5,  # frame + route length + today's stretch
    "/today/?part=rooms": 6,  # frame + the newest rooms of each kind, active per kind, their slots and memories
    "/today/?part=refurb": 6,  # frame + palace version + the active memories, the worst few
    "/palace/?sort=route": 5,  # frame + one page of rows + their open contradictions
    "/palace/?kind=fact&status=all": 5,
    "/palace/?room=": 6,  # + the room
    "/palace/?due=1": 6,  # + the due queue (2); nothing is due here, so no contradictions read
    "/corridor/": 11,  # frame + badge + room count, rooms, active per room, edges by room pair, shared entities
    "/corridor/rooms/": 8,  # frame + badge + one page of rooms + their slots and memories
    "/corridor/rooms/?after=": 5,
    "/corridor/room/": 9,  # frame + the room + what it holds + its corridors (edges, shared entities, rooms, active)
    "/corridor/m/": 8,  # frame + the memory + one edge query per hop (3) and the memories reached
    "/log/?category=writes": 5,  # frame + rows + week counts
    "/episodes/": 9,  # frame + badge + session heads + their entries + their capture summaries
    "/episodes/m/nearby/": 5,  # frame + the anchor + the episodes around it
}


@pytest.fixture
def filled(make_memory, personal):
    def fill(n: int) -> dict[str, int]:
        start = timezone.now() - timedelta(hours=5)
        made = []
        for i in range(n):
            kind = ("fact", "decision", "episode")[i % 3]
            made.append(
                make_memory(
                    personal,
                    f"memory {i} about the deploy",
                    kind=kind,
                    placard=f"deploy {i % 4}",
                    session=f"s-{i % 2}" if kind == "episode" else "",
                    occurred_at=start + timedelta(minutes=5 * i),
                )
            )
        for a, b in zip(made, made[1:], strict=False):
            Edge.objects.create(palace=personal, from_memory=a, to_memory=b, kind="related")
        Memory.objects.filter(pk__in=[m.pk for m in made[::2]]).update(review_enrolled=True)
        episode = next(m for m in made if m.kind == "episode")
        return {
            "memory": made[len(made) // 2].pk,
            "episode": episode.pk,
            "room": Room.objects.filter(palace=personal).first().pk,
        }

    return fill


def urls(ids: dict[str, int]) -> list[tuple[str, str, bool]]:
    """(pinned key, url, htmx?) for every list view and region."""
    return [
        ("/today/", "/today/", False),
        ("/today/?part=tour", "/today/?part=tour", True),
        ("/today/?part=rooms", "/today/?part=rooms", True),
        ("/today/?part=refurb", "/today/?part=refurb", True),
        ("/palace/?sort=route", "/palace/?sort=route", True),
        ("/palace/?kind=fact&status=all", "/palace/?kind=fact&status=all", True),
        ("/palace/?room=", f"/palace/?room={ids['room']}", True),
        ("/palace/?due=1", "/palace/?due=1", True),
        ("/corridor/", "/corridor/", False),
        ("/corridor/rooms/", "/corridor/rooms/?kind=fact", False),
        ("/corridor/rooms/?after=", "/corridor/rooms/?kind=fact&after=0", True),
        ("/corridor/room/", f"/corridor/room/{ids['room']}/", True),
        ("/corridor/m/", f"/corridor/m/{ids['memory']}/neighbours/?hops=3", True),
        ("/log/?category=writes", "/log/?category=writes", True),
        ("/episodes/", "/episodes/", False),
        ("/episodes/m/nearby/", f"/episodes/{ids['episode']}/nearby/", True),
    ]


@pytest.mark.parametrize("n", [9, 30])
def test_list_views_cost_the_same_number_of_queries_at_any_size(
    n, alice, client_for, filled, django_assert_num_queries
):
    ids = filled(n)
    client = client_for(alice)
    for key, url, htmx in urls(ids):
        headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
        client.get(url, **headers)  # warm the process caches (content types, translations, URL patterns)
        cache.clear()  # Today's regions cold, as after a write
        with django_assert_num_queries(PINNED[key]):
            assert client.get(url, **headers).status_code == 200, url
