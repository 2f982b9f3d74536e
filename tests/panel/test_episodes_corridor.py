"""Episodes (grouped by session, date range, Nearby) and Corridor (room graph, room detail, neighbours, bench)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from memory.models import Edge


@pytest.fixture
def sessions(make_memory, personal):
    base = timezone.make_aware(datetime(2026, 11, 20, 9, 0))
    for i, text in enumerate(["opened the incident", "rolled back", "wrote the post-mortem"]):
        make_memory(personal, text, kind="episode", session="s-old", occurred_at=base + timedelta(minutes=30 * i))
    later = base + timedelta(days=5)
    for i, text in enumerate(["planned the sprint", "assigned tickets"]):
        make_memory(personal, text, kind="episode", session="s-new", occurred_at=later + timedelta(minutes=10 * i))
    return base


def test_episodes_are_grouped_newest_session_first_entries_in_order(alice, client_for, sessions):
    html = client_for(alice).get("/episodes/").content.decode()
    assert html.index("s-new") < html.index("s-old")
    assert html.index("opened the incident") < html.index("rolled back") < html.index("wrote the post-mortem")
    assert "3 episodes" in html and "2 episodes" in html


def test_date_range_filters_and_returns_the_partial(alice, client_for, sessions):
    html = client_for(alice).get("/episodes/?from=2026-11-19&to=2026-11-21", HTTP_HX_REQUEST="true").content.decode()
    assert "s-old" in html and "s-new" not in html and "<html" not in html


def test_nearby_expands_within_the_window(alice, client_for, sessions, make_memory, personal):
    anchor = make_memory(
        personal, "checked the dashboards", kind="episode", session="s-x", occurred_at=sessions + timedelta(minutes=40)
    )
    client = client_for(alice)
    narrow = client.get(f"/episodes/{anchor.pk}/nearby/?minutes=15", HTTP_HX_REQUEST="true").content.decode()
    assert "rolled back" in narrow and "opened the incident" not in narrow and "<html" not in narrow
    wide = client.get(f"/episodes/{anchor.pk}/nearby/", HTTP_HX_REQUEST="true").content.decode()
    assert "opened the incident" in wide and "wrote the post-mortem" in wide and "planned the sprint" not in wide


def test_corridor_graph_has_rooms_and_the_links_between_them(alice, client_for, make_memory, personal):
    fact = make_memory(personal, "Postgres is the store", kind="fact")
    decision = make_memory(personal, "We chose Postgres", kind="decision")
    Edge.objects.create(palace=personal, from_memory=decision, to_memory=fact, kind="supports")
    html = client_for(alice).get("/corridor/").content.decode()
    assert html.count('class="node k-') == 2 and html.count('<path class="link e-related"') == 1
    assert "2 rooms of 2, 1 corridors between rooms" in html


def test_room_and_neighbours_partials(alice, client_for, make_memory, personal):
    a = make_memory(personal, "Postgres is the store", kind="fact")
    b = make_memory(personal, "We chose Postgres", kind="decision")
    c = make_memory(personal, "Backups run nightly", kind="skill")
    Edge.objects.create(palace=personal, from_memory=b, to_memory=a, kind="supports")
    Edge.objects.create(palace=personal, from_memory=a, to_memory=c, kind="related")
    client = client_for(alice)
    room = client.get(f"/corridor/room/{a.slot.room_id}/", HTTP_HX_REQUEST="true").content.decode()
    assert "Postgres is the store" in room and "<html" not in room
    one = client.get(f"/corridor/m/{b.pk}/neighbours/?hops=1", HTTP_HX_REQUEST="true").content.decode()
    assert "Postgres is the store" in one and "Backups run nightly" not in one
    two = client.get(f"/corridor/m/{b.pk}/neighbours/?hops=2", HTTP_HX_REQUEST="true").content.decode()
    assert "Backups run nightly" in two


def test_bench_shows_ranked_hits_with_labels(alice, client_for, make_memory, personal):
    make_memory(personal, "Carol owns the billing service")
    html = client_for(alice).get("/corridor/bench/?q=billing", HTTP_HX_REQUEST="true").content.decode()
    assert "lex#1" in html and "billing service" in html and "search" in html and "<html" not in html


def test_room_directory_pages_through_every_room_of_a_kind(alice, client_for, make_memory, personal, monkeypatch):
    from memory.selectors import rooms

    monkeypatch.setattr(rooms, "ROOM_PAGE", 2)
    for i in range(2 * 9 + 1):
        make_memory(personal, f"fact {i}", placard=f"note {i}")
    make_memory(personal, "Tea, not coffee", kind="preference", placard="tea")
    client = client_for(alice)
    first = client.get(f"/corridor/rooms/?palace={personal.pk}&kind=fact").content.decode()
    assert "Fact Hall-2" in first and "Fact Hall-3" not in first and "9/9" in first and "note 17" in first
    more = f"/corridor/rooms/?palace={personal.pk}&amp;kind=fact&amp;after=2"
    assert f'href="{more}" hx-get="{more}"' in first and "<html" in first
    rest = client.get(more.replace("&amp;", "&"), HTTP_HX_REQUEST="true").content.decode()
    assert "Fact Hall-3" in rest and "1/9" in rest and "note 18" in rest
    assert "<html" not in rest and "More rooms" not in rest and "Fact Hall-2" not in rest
    other = client.get("/corridor/rooms/?kind=preference").content.decode()  # the scope's palace by default
    assert "Preference Pavilion" in other and "tea" in other and "Fact Hall" not in other


def test_room_directory_refuses_an_unknown_kind(alice, client_for, personal):
    response = client_for(alice).get(f"/corridor/rooms/?palace={personal.pk}&kind=gossip")
    assert response.status_code == 422
    assert client_for(alice).get(f"/corridor/rooms/?palace={personal.pk}&kind=skill").status_code == 200


def test_room_directory_of_the_project_palace_in_the_both_scope(alice, client_for, make_memory, personal, project):
    make_memory(project, "Deploy freeze starts on December 20", kind="decision", placard="freeze")
    client = client_for(alice)
    assert client.post("/scope/", {"mode": "both", "project": project.pk, "next": "/today/"}).status_code == 302
    html = client.get(f"/corridor/rooms/?palace={project.pk}&kind=decision").content.decode()
    assert "Decision Chamber" in html and "freeze" in html and "1/9" in html
    assert f'href="/corridor/rooms/?palace={personal.pk}&amp;kind=decision"' in html  # switch to my palace


def test_date_presets_link_to_their_range_and_mark_the_chosen_one(alice, client_for, make_memory, personal):
    import time_machine

    today = timezone.make_aware(datetime(2026, 11, 25, 12, 0))
    make_memory(personal, "today's standup", kind="episode", session="s-today", occurred_at=today)
    make_memory(personal, "last week's retro", kind="episode", session="s-week", occurred_at=today - timedelta(days=5))
    old = today - timedelta(days=20)
    make_memory(personal, "last month's kickoff", kind="episode", session="s-old", occurred_at=old)
    client = client_for(alice)
    with time_machine.travel(today, tick=False):
        html = client.get("/episodes/").content.decode()
        presets = html[html.index('class="chips presets"') : html.index("</nav>", html.index('class="chips presets"'))]
        assert 'href="/episodes/?from=2026-11-25&amp;to=2026-11-25"' in presets
        assert 'href="/episodes/?from=2026-11-19&amp;to=2026-11-25"' in presets
        assert 'href="/episodes/?from=2026-10-27&amp;to=2026-11-25"' in presets
        assert '<a class="chip on" href="/episodes/"' in presets  # no range: "All" is the chosen one
        week = client.get("/episodes/?from=2026-11-19&to=2026-11-25", HTTP_HX_REQUEST="true").content.decode()
        assert "last week&#x27;s retro" in week and "today&#x27;s standup" in week
        assert "last month" not in week
        full = client.get("/episodes/?from=2026-11-19&to=2026-11-25").content.decode()
        assert '<a class="chip on" href="/episodes/?from=2026-11-19&amp;to=2026-11-25"' in full
        zh = client.get("/episodes/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
        assert ">7 天</a>" in zh and ">全部</a>" in zh and ">今日</a>" in zh


def test_a_capture_session_header_names_agent_project_start_and_turns(
    alice, bob, client_for, make_memory, project, bob_editor
):
    from capture.models import CaptureSession, CaptureTurn

    start = timezone.make_aware(datetime(2026, 11, 20, 9, 0))
    for i, text in enumerate(["opened the incident", "rolled back"]):
        make_memory(project, text, kind="episode", session="sess-42", occurred_at=start + timedelta(minutes=5 * i))
    session = CaptureSession.objects.create(
        user=alice,
        palace=project,
        key="sess-42",
        client="claude-code",
        origin="github.com/acme/checkout",
        summary="Checkout incident: rollback, webhooks recovered.",
        summary_method="rules",
        started_at=start,
    )
    for i, role in enumerate(["user", "assistant", "user", "tool"]):
        CaptureTurn.objects.create(session=session, index=i, role=role, text="x" if role != "tool" else "")
    client = client_for(alice)
    client.post("/scope/", {"mode": "project", "project": project.pk, "next": "/episodes/"})
    html = client.get("/episodes/").content.decode()
    facts = html[html.index('class="session-facts"') :].split("</h2>")[0]
    assert "claude-code" in facts and "github.com/acme/checkout" in facts
    assert "started 2026-11-20 09:00" in facts and "2 turns" in facts
    assert "Checkout incident: rollback" in html
    # Capture sessions are their person's own: bob reads the project's episodes, not alice's session facts.
    bob_client = client_for(bob)
    bob_client.post("/scope/", {"mode": "project", "project": project.pk, "next": "/episodes/"})
    theirs = bob_client.get("/episodes/").content.decode()
    assert "opened the incident" in theirs  # positive control: the shared episodes
    assert "session-facts" not in theirs and "claude-code" not in theirs and "Checkout incident" not in theirs
