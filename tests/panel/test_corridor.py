"""The Corridor: one panel per palace, rooms sized by active memories, corridors by kind counted from the database
(supersede, contradiction, next turn, other edges, shared entities), a legend and a table of corridors, the room
panel's corridors; nothing of a palace outside the user's scope, by the scope and by row-level security."""

from __future__ import annotations

import re

import pytest

from memory.models import Edge, Entity, MemoryEntity
from memory.selectors import room_corridors, room_graph
from palace.models import Room
from palace.rls import acting_as


@pytest.fixture
def corridors(make_memory, personal):
    """Fact Hall (2 facts, a contradiction and a supersede inside), Decision Chamber (supports a fact), Skill
    Workshop (shares the entity Carol with Fact Hall), Episode Gallery (two turns, next), and a dismissed
    contradiction between the decision and the skill that must not count."""
    fact = make_memory(personal, "Carol owns billing", kind="fact")
    old = make_memory(personal, "Carol owned billing until May", kind="fact", status="superseded")
    other = make_memory(personal, "Billing runs on port 8001", kind="fact")
    decision = make_memory(personal, "We keep billing in Postgres", kind="decision")
    skill = make_memory(personal, "Ask Carol before rotating billing keys", kind="skill")
    first = make_memory(personal, "opened the incident", kind="episode", session="s1")
    second = make_memory(personal, "rolled back", kind="episode", session="s1")
    Edge.objects.create(palace=personal, from_memory=fact, to_memory=old, kind="supersedes")
    Edge.objects.create(palace=personal, from_memory=other, to_memory=fact, kind="contradicts", status="pending")
    Edge.objects.create(palace=personal, from_memory=decision, to_memory=fact, kind="supports")
    Edge.objects.create(palace=personal, from_memory=first, to_memory=second, kind="next")
    Edge.objects.create(palace=personal, from_memory=decision, to_memory=skill, kind="contradicts", status="dismissed")
    carol = Entity.objects.create(palace=personal, name="Carol", kind="person", key="carol")
    for memory in (fact, skill):
        MemoryEntity.objects.create(palace=personal, memory=memory, entity=carol)
    return {"fact": fact, "decision": decision, "skill": skill, "episode": first}


def room_of(memory) -> int:
    return memory.slot.room_id


def test_graph_counts_match_the_data(alice, corridors, personal):
    fact, decision, skill = (room_of(corridors[k]) for k in ("fact", "decision", "skill"))
    episode = room_of(corridors["episode"])
    with acting_as(alice):
        found = room_graph(palace_ids=[personal.pk])
    assert {r.name: r.memories for r in found.rooms} == {
        "Fact Hall": 2,  # the superseded fact is not active
        "Decision Chamber": 1,
        "Skill Workshop": 1,
        "Episode Gallery": 2,
    }
    links = {(link.a, link.b): link.counts for link in found.links}
    assert links == {
        (fact, fact): {"supersede": 1, "contradiction": 1},
        (min(fact, decision), max(fact, decision)): {"related": 1},
        (min(fact, skill), max(fact, skill)): {"entity": 1},
        (episode, episode): {"next": 1},
    }
    assert found.inner_edges == 3 and found.total_rooms == 4


def test_corridor_page_draws_nodes_corridors_legend_and_table(alice, client_for, corridors):
    html = client_for(alice).get("/corridor/").content.decode()
    assert html.count('class="node k-') == 4
    assert 'aria-label="Fact Hall (2)"' in html and 'aria-label="Skill Workshop (1)"' in html
    drawn = re.findall(r'<path class="link e-([a-z]+)"', html)
    assert sorted(drawn) == ["contradiction", "entity", "next", "related", "supersede"]
    assert "4 rooms of 4, 2 corridors between rooms" in html
    legend = html[html.index('class="legend') : html.index("</div>", html.index('class="legend'))]
    for word in ("supersedes", "contradiction", "next turn", "related", "shared entity", "size: active memories"):
        assert word in legend
    table = html[html.index('<table class="corridors">') : html.index("</table>")]
    assert table.count("<tr>") == 5  # the header and four corridors (two of them inside a room)
    assert "<td>Fact Hall</td><td>Skill Workshop</td>" in table or "<td>Skill Workshop</td><td>Fact Hall</td>" in table
    assert "inside the room" in table


def test_a_room_lists_its_corridors_and_their_kinds(alice, client_for, corridors):
    fact_room = room_of(corridors["fact"])
    with acting_as(alice):
        found = room_corridors(room=Room.objects.get(pk=fact_room))
    assert [(c.other.name if c.other else None, c.counts) for c in found] == [
        ("Decision Chamber", {"related": 1}),
        ("Skill Workshop", {"entity": 1}),
        (None, {"supersede": 1, "contradiction": 1}),
    ]
    html = client_for(alice).get(f"/corridor/room/{fact_room}/", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in html and "Corridors from this room" in html
    skill_room = room_of(corridors["skill"])
    assert f'hx-get="/corridor/room/{skill_room}/"' in html and "shared entity × 1" in html
    assert "contradiction × 1" in html and "Carol owns billing" in html


def test_both_scope_draws_one_labelled_panel_per_palace(alice, client_for, make_memory, personal, project):
    make_memory(personal, "Tea, not coffee", kind="fact")
    make_memory(project, "The API listens on 8001", kind="fact")
    client = client_for(alice)
    client.post("/scope/", {"mode": "both", "project": project.pk, "next": "/corridor/"})
    html = client.get("/corridor/").content.decode()
    captions = re.findall(r'<strong class="palace-name">([^<]+)</strong>', html)
    assert captions == ["my palace", project.origin_key]
    # "Fact Hall" twice, each under its own palace's caption
    first, second = html.index(captions[0]), html.index(project.origin_key, html.index("palace-name") + 20)
    assert html.index('aria-label="Fact Hall (1)"', first) < second < html.rindex('aria-label="Fact Hall (1)"')


def test_a_member_sees_the_project_and_nothing_of_anothers_palace(
    alice, bob, charlie, client_for, make_memory, personal, project
):
    private = make_memory(personal, "Alice's private note about Carol", kind="preference")
    shared = make_memory(project, "Deploy freeze from December 20", kind="decision")
    private_room, shared_room = room_of(private), room_of(shared)
    bob_client = client_for(bob)
    bob_client.post("/scope/", {"mode": "both", "project": project.pk, "next": "/corridor/"})
    seen = bob_client.get("/corridor/").content.decode()
    assert f'data-id="{shared_room}"' in seen  # positive control: the project's room
    assert f'data-id="{private_room}"' not in seen and "Preference Pavilion" not in seen
    assert client_for(alice).get("/corridor/").content.decode().count(f'data-id="{private_room}"') == 1
    outsider = client_for(charlie).get("/corridor/").content.decode()
    assert f'data-id="{shared_room}"' not in outsider and f'data-id="{private_room}"' not in outsider
    assert client_for(charlie).get(f"/corridor/room/{shared_room}/").status_code == 404
    assert bob_client.get(f"/corridor/room/{shared_room}/").status_code == 200
    # Row-level security holds even when a caller passes palace ids outside the user's palaces.
    with acting_as(charlie):
        assert room_graph(palace_ids=[personal.pk, project.pk]).rooms == []
    with acting_as(bob):
        assert [r.id for r in room_graph(palace_ids=[personal.pk, project.pk]).rooms] == [shared_room]


def test_corridor_in_chinese(alice, client_for, corridors):
    html = client_for(alice).get("/corridor/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert 'aria-label="事实厅 (2)"' in html and "技艺坊" in html
    for word in ("取代", "矛盾", "下一轮", "相关", "共同实体", "我的宫殿"):
        assert word in html, word
    assert "inside the room" not in html and "shared entity" not in html
