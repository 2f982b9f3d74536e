"""Today: summary counts, the due card (cue only → Reveal → grade 5/3/1), lazily loaded regions, health ring."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone

from memory.models import Edge, Memory
from palace.models import OpLog, Room
from review.models import ReviewCard


@pytest.fixture
def due_memory(make_memory, personal):
    memory = make_memory(
        personal, "We chose pgvector over a separate vector store", kind="decision", placard="pgvector"
    )
    Memory.objects.filter(pk=memory.pk).update(review_enrolled=True, created_at=timezone.now() - timedelta(days=3))
    return memory


def test_summary_counts_and_open_contradictions(alice, client_for, make_memory, personal):
    a = make_memory(personal, "The deploy is on Fridays", kind="decision")
    b = make_memory(personal, "The deploy is on Mondays", kind="decision")
    Edge.objects.create(palace=personal, from_memory=b, to_memory=a, kind="contradicts", status="pending")
    html = client_for(alice).get("/today/").content.decode()
    assert '<b id="stat-memories">2</b>' in html and '<b id="stat-open">1</b>' in html
    assert "2 saved in the last 7 days" in html


def test_summary_counts_active_memories_per_kind_and_every_memory_new_this_week(
    alice, client_for, make_memory, personal
):
    make_memory(personal, "Tea, not coffee", kind="preference")
    make_memory(personal, "Green tea", kind="preference", status="forgotten")  # new this week, not active
    make_memory(personal, "An old habit", kind="preference", created_at=timezone.now() - timedelta(days=30))
    make_memory(personal, "Deploys on Fridays", kind="decision")
    html = client_for(alice).get("/today/").content.decode()
    # 3 active (one of them old) beside 3 saved this week (one since forgotten): two different sets, and each
    # figure says which, so they cannot read as a contradiction
    assert '<b id="stat-memories">3</b><span>active memories</span>' in html and "3 saved in the last 7 days" in html
    assert "including those since superseded or forgotten" in html
    assert "preference 2</a>" in html and "decision 1</a>" in html and "fact 0</a>" in html


def test_due_card_shows_the_cue_not_the_body(alice, client_for, due_memory):
    html = client_for(alice).get("/today/").content.decode()
    assert "Decision Chamber#1" in html and "pgvector" in html and "2 days overdue" in html
    assert "separate vector store" not in html
    assert 'title="1 memory due for review today">1 due</span>' in html  # the nav badge says what it counts


def test_reveal_then_grade_advances_the_schedule(alice, client_for, due_memory):
    client = client_for(alice)
    revealed = client.post(f"/review/{due_memory.pk}/reveal/", HTTP_HX_REQUEST="true").content.decode()
    assert "separate vector store" in revealed and "Remembered" in revealed and "<html" not in revealed
    graded = client.post(f"/review/{due_memory.pk}/grade/", {"grade": "hazy"}, HTTP_HX_REQUEST="true")
    assert graded.status_code == 200 and "Graded" in graded.content.decode()
    card = ReviewCard.objects.get(memory=due_memory)
    assert card.last_grade == 3 and card.due_at > timezone.now()
    assert OpLog.objects.filter(op="review.grade", target_id=due_memory.pk).count() == 1
    after = client.get("/today/").content.decode()
    assert "days overdue" not in after and "Nothing is due for review today." in after
    assert f'id="cue-{due_memory.pk}"' in after.split('id="early-h"')[1]  # offered again only to review early


def test_bad_grade_is_422_and_stores_nothing(alice, client_for, due_memory):
    response = client_for(alice).post(f"/review/{due_memory.pk}/grade/", {"grade": "5"})
    assert response.status_code == 422
    assert not ReviewCard.objects.filter(memory=due_memory).exists()


def test_regions_load_as_partials(alice, client_for, make_memory, personal):
    for i in range(9):
        make_memory(personal, f"fact number {i}", placard="same placard")
    client = client_for(alice)
    rooms = client.get("/today/?part=rooms", HTTP_HX_REQUEST="true").content.decode()
    assert "Fact Hall" in rooms and "9/9" in rooms and "<html" not in rooms
    tour = client.get("/today/?part=tour", HTTP_HX_REQUEST="true").content.decode()
    assert "stretch of the route" in tour and tour.count("Fact Hall#") == 7 and "<html" not in tour
    refurb = client.get("/today/?part=refurb", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="stat-clarity" hx-swap-oob="true"' in refurb and "same placard" in refurb
    assert ">0%</b>" in refurb  # nine identical placards: none is clear


def test_small_palace_is_not_scanned_and_clarity_stays_unknown(alice, client_for, make_memory, personal):
    make_memory(personal, "only one", placard="x")
    refurb = client_for(alice).get("/today/?part=refurb", HTTP_HX_REQUEST="true").content.decode()
    assert "Not scanned" in refurb and ">—</b>" in refurb


def test_without_htmx_each_region_link_opens_that_region_as_a_page(alice, client_for, make_memory, personal):
    make_memory(personal, "only one", placard="x")
    client = client_for(alice)
    today = client.get("/today/").content.decode()
    for part, shown in (("rooms", "Fact Hall"), ("refurb", "Not scanned"), ("tour", "Tour proposal")):
        assert f'href="/today/?part={part}"' in today  # the lazy region's link works without JavaScript
        html = client.get(f"/today/?part={part}").content.decode()
        assert html.startswith("<!DOCTYPE html>") or "<html" in html  # a whole page, in the frame
        assert shown in html and "Loading the" not in html, part
        assert 'href="/today/"' in html  # and the way back
    region = client.get("/today/?part=rooms", HTTP_HX_REQUEST="true").content.decode()
    assert "Fact Hall" in region and "<html" not in region  # control: htmx still gets the bare region


def test_health_ring_reports_real_checks(alice, client_for):
    html = client_for(alice).get("/today/health/", HTTP_HX_REQUEST="true").content.decode()
    assert "<svg" in html and "checks pass" in html and "database" in html


def test_health_ring_reasons_are_for_staff_only(alice, client_for, make_user, settings):
    settings.REDIS_URL = "unix:///nonexistent/atrium-test/redis.sock"
    staff = client_for(make_user("operator", admin=True))
    shown = staff.get("/today/health/", HTTP_HX_REQUEST="true").content.decode()
    assert "Redis: failing — " in shown and "nonexistent" in shown  # positive control: staff read the reason
    member = client_for(alice).get("/today/health/", HTTP_HX_REQUEST="true").content.decode()
    assert "Redis: failing</title>" in member and "nonexistent" not in member and "PostgreSQL" not in member


def test_health_ring_never_waits_for_the_report_in_a_server(alice, client_for, monkeypatch):
    """A server shows the last measurement at once and measures again in the background when it is stale;
    before the first one it shows a grey ring that polls."""
    from django.core.cache import cache

    from panel import health

    monkeypatch.setattr(health, "MEASURE_IN_BACKGROUND", True)
    started = []
    monkeypatch.setattr(health, "_start", started.append)
    cache.delete(health.CACHE_KEY)
    cache.delete(health.LOCK_KEY)
    client = client_for(alice)
    first = client.get("/today/health/", HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="load delay:1s"' in first and "checks pass" not in first
    assert started == [health._in_background]
    health.measure()  # what the background thread runs (it also closes its own connections, not wanted here)
    cache.delete(health.LOCK_KEY)
    fresh = client.get("/today/health/", HTTP_HX_REQUEST="true").content.decode()
    assert "checks pass" in fresh and "database" in fresh and "load delay" not in fresh
    assert len(started) == 1  # fresh: nothing started again
    stale = cache.get(health.CACHE_KEY)
    cache.set(health.CACHE_KEY, {**stale, "at": stale["at"] - health.FRESH_SECONDS - 1})
    assert "checks pass" in client.get("/today/health/", HTTP_HX_REQUEST="true").content.decode()
    assert len(started) == 2  # the stale one was shown and a new measurement started


def test_room_directory_shows_the_newest_rooms_of_each_kind_and_links_to_all(alice, client_for, make_memory, personal):
    for i in range(4 * 9 + 1):  # five fact rooms, the newest with one slot used
        make_memory(personal, f"fact {i}", placard=f"note {i}")
    make_memory(personal, "Tea, not coffee", kind="preference", placard="tea")
    html = client_for(alice).get("/today/?part=rooms", HTTP_HX_REQUEST="true").content.decode()
    rooms = dict(Room.objects.filter(palace=personal, kind="fact").values_list("ordinal", "pk"))
    assert sorted(rooms) == [1, 2, 3, 4, 5]
    assert all(f'?room={rooms[o]}"' in html for o in (5, 4, 3))
    assert all(f'?room={rooms[o]}"' not in html for o in (1, 2))  # bounded: the newest three of the kind
    assert "5 rooms · 37 active" in html and "1 room · 1 active" in html
    assert f'href="/corridor/rooms/?palace={personal.pk}&amp;kind=fact">All 5 rooms</a>' in html
    assert "1/9" in html and "note 36" in html and "9/9" in html and "note 35" in html
    assert "kind=preference" not in html  # one room: nothing more to list
    assert "<html" not in html


def test_refurb_list_is_rescanned_after_a_memory_write_not_after_a_review_grade(
    alice, client_for, make_memory, personal, system, django_assert_num_queries
):
    from django.core.cache import cache
    from django.db import transaction

    from palace.oplog import oplog_write

    for i in range(9):
        make_memory(personal, f"fact number {i}", placard="same placard")
    cache.clear()
    client = client_for(alice)
    url = "/today/?part=refurb"
    assert "<strong>same placard</strong>" in client.get(url, HTTP_HX_REQUEST="true").content.decode()

    def op(name: str) -> None:
        with transaction.atomic():
            oplog_write(op=name, actor=system, palace=personal, target_kind="memory", target_id=1)

    op("review.grade")
    with django_assert_num_queries(4):  # frame + the palace's version: the cached scan still holds
        client.get(url, HTTP_HX_REQUEST="true")
    Memory.objects.filter(placard="same placard").update(placard="clear placard 2026")
    op("memory.update")
    with django_assert_num_queries(6):  # frame + version + the active memories, the worst few: rescanned
        html = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "<strong>same placard</strong>" not in html and "<strong>clear placard 2026</strong>" in html


def test_open_count_links_to_judge_and_the_badge_says_what_it_counts(alice, client_for, make_memory, personal):
    a = make_memory(personal, "The deploy is on Fridays", kind="decision")
    b = make_memory(personal, "The deploy is on Mondays", kind="decision")
    Edge.objects.create(palace=personal, from_memory=b, to_memory=a, kind="contradicts", status="pending")
    html = client_for(alice).get("/today/").content.decode()
    link = html.split('<a class="stat stat-link" href="/judge/"')[1].split("</a>")[0]
    assert '<b id="stat-open">1</b><span>open →</span>' in link and "decide them on the Judge page" in link
    assert 'title="0 memories due for review today">0 due</span>' in html
    zh = client_for(alice).get("/today/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert "0 待复习</span>" in zh and "待裁定 →" in zh and "到裁判页处理" in zh and "条有效记忆" in zh


def test_week_chart_has_an_axis_day_labels_and_a_count_per_day(alice, client_for, make_memory, personal):
    make_memory(personal, "one")
    make_memory(personal, "two")
    make_memory(personal, "older", created_at=timezone.now() - timedelta(days=2))
    html = client_for(alice).get("/today/").content.decode()
    chart = html.split('<svg class="week"')[1].split("</svg>")[0]
    assert chart.count('<g class="day') == 7 and chart.count("<rect") == 2  # two days had saves, five none
    assert (
        '<line class="axis"' in chart and '<text class="axis-label" x="13" y="16.5" text-anchor="end">2</text>' in chart
    )
    today = timezone.localdate()
    assert f'class="day-label" x="120" y="52" text-anchor="middle">{today.day}</text>' in chart  # today, rightmost
    assert '<text class="count" x="120" y="11" text-anchor="middle">2</text>' in chart  # the busiest day, on top


# Three days in a row: the stretch of a nine-stop route starts at stop 1, 2 and 3 (walks.tour_stretch).
@pytest.mark.parametrize("day", [5, 6, 7])
def test_tour_counts_one_set_of_stops_and_drops_the_no_placard_noise(alice, client_for, make_memory, personal, day):
    made = [make_memory(personal, f"fact number {i}", placard="" if i % 2 else f"placard {i}") for i in range(9)]
    Memory.objects.filter(pk=made[4].pk).update(status="forgotten")  # its stop stays on the route, closed
    with time_machine.travel(datetime(2026, 12, day, 12, tzinfo=UTC), tick=False):
        tour = client_for(alice).get("/today/?part=tour", HTTP_HX_REQUEST="true").content.decode()
    stretch = re.search(r"stops (\d)–(\d) of 9</p>", tour)  # route positions; where the stretch starts moves by day
    assert stretch is not None
    assert "Walk all 9 stops" in tour and "8 of them hold an active memory now" in tour  # the same nine stops
    assert "no placard" not in tour
    # Every active stop of today's stretch with a placard shows it (memory i sits at stop i + 1), whichever day it is.
    shown = [i for i in range(9) if int(stretch[1]) <= i + 1 <= int(stretch[2]) and i != 4 and not i % 2]
    assert shown and all(f"<strong>placard {i}</strong>" in tour for i in shown)
    assert tour.count("<strong>placard") == len(shown)


def test_review_is_visible_on_day_one(alice, client_for, make_memory, personal):
    client = client_for(alice)
    empty = client.get("/today/").content.decode()
    assert "No memory in this scope is under review yet" in empty and "Spaced review (SM-2)" in empty
    memory = make_memory(personal, "We chose pgvector", kind="decision", placard="pgvector")
    Memory.objects.filter(pk=memory.pk).update(review_enrolled=True)  # saved today: first due tomorrow
    html = client.get("/today/").content.decode()
    assert "Nothing is due for review today." in html and "The next review comes due on" in html
    early = html.split('id="early-h"')[1]
    assert f'id="cue-{memory.pk}"' in early and f'action="/review/{memory.pk}/reveal/"' in early
    assert "We chose pgvector" not in html  # the cue, never the body
    revealed = client.post(f"/review/{memory.pk}/reveal/", HTTP_HX_REQUEST="true").content.decode()
    assert "We chose pgvector" in revealed  # reviewing early works like a due review
    zh = client.get("/today/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert "今天没有需要复习的记忆。" in zh and "提前复习" in zh and "间隔复习（SM-2）" in zh
