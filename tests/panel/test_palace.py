"""Palace: the memory list with filters, sort, keyset pages, search labels; edit through the supersede chain;
forget, restore and batch; partials for htmx; pinned query counts."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Memory
from palace.models import OpLog


def rows_of(html: str) -> int:
    return html.count('class="mrow ')


def test_list_shows_coordinates_kind_and_filters(alice, client_for, make_memory, personal):
    make_memory(personal, "Tea, not coffee", kind="preference", placard="tea")
    make_memory(personal, "Deploys happen on Fridays", kind="decision")
    make_memory(personal, "Old phone number", kind="fact", status="forgotten")
    client = client_for(alice)
    page = client.get("/palace/").content.decode()
    assert "Preference Pavilion#1" in page and "Decision Chamber#1" in page and "Old phone number" not in page
    decisions = client.get("/palace/?kind=decision").content.decode()
    assert "Deploys happen" in decisions and "Tea, not coffee" not in decisions
    forgotten = client.get("/palace/?status=forgotten").content.decode()
    assert "Old phone number" in forgotten and "Tea, not coffee" not in forgotten
    room_id = Memory.objects.get(content="Tea, not coffee").slot.room_id
    in_room = client.get(f"/palace/?room={room_id}").content.decode()
    assert "Tea, not coffee" in in_room and "Deploys happen" not in in_room


def test_htmx_request_gets_only_the_results_region(alice, client_for, make_memory, personal):
    make_memory(personal, "Tea, not coffee", kind="preference")
    response = client_for(alice).get("/palace/?kind=preference", HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="results">') and "<html" not in body and "Tea, not coffee" in body
    assert "HX-Request" in response["Vary"]


def test_every_hx_get_has_an_href(alice, client_for, make_memory, personal):
    make_memory(personal, "Tea, not coffee", kind="preference")
    client = client_for(alice)
    for url in ["/today/", "/palace/", "/corridor/", "/log/", "/episodes/"]:
        html = client.get(url).content.decode()
        for tag in re.findall(r"<a\b[^>]*hx-get=[^>]*>", html):
            assert "href=" in tag, tag


def test_keyset_pages_walk_every_memory_once(alice, client_for, make_memory, personal):
    start = timezone.now() - timedelta(days=1)
    for i in range(120):
        make_memory(personal, f"memory number {i}", created_at=start + timedelta(minutes=i), log=False)
    client = client_for(alice)
    seen: list[str] = []
    html = client.get("/palace/").content.decode()
    while True:
        seen += [part.split("<")[0] for part in html.split('<p class="text">')[1:]]
        if "after=" not in html:
            break
        cursor = html.split("after=")[1].split('"')[0].split("&")[0]
        html = client.get(f"/palace/?after={cursor}", HTTP_HX_REQUEST="true").content.decode()
        assert "<html" not in html
    assert len(seen) == 120 and len(set(seen)) == 120
    assert seen[0] == "memory number 119"  # newest first


def test_the_panel_and_rest_share_one_cursor(alice, client_for, make_memory, personal, token_for):
    """One selector, one cursor format: a page cursor from REST continues the panel's list and back; a cursor the
    server did not issue starts the panel over at the first page (REST answers 422)."""
    start = timezone.now() - timedelta(days=1)
    for i in range(55):
        make_memory(personal, f"shared cursor {i}.", created_at=start + timedelta(minutes=i), log=False)
    api = client_for(alice)
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token_for(alice)}"}
    cursor = api.get("/api/v1/memories", {"limit": 3}, **bearer).json()["next_cursor"]
    html = client_for(alice).get(f"/palace/?after={cursor}", HTTP_HX_REQUEST="true").content.decode()
    assert "shared cursor 51." in html and "shared cursor 52." not in html  # REST's page 2, in the panel
    first = client_for(alice).get("/palace/").content.decode()
    panel_cursor = first.split("after=")[1].split('"')[0].split("&")[0]
    rest = api.get("/api/v1/memories", {"cursor": panel_cursor, "limit": 50}, **bearer).json()
    assert [m["content"] for m in rest["items"]] == [f"shared cursor {i}." for i in range(4, -1, -1)]  # and back
    stale = client_for(alice).get("/palace/?after=not-a-cursor", HTTP_HX_REQUEST="true")
    assert stale.status_code == 200 and "shared cursor 54." in stale.content.decode()  # the first page again
    assert api.get("/api/v1/memories", {"cursor": "not-a-cursor"}, **bearer).status_code == 422


def test_route_sort_follows_the_tour(alice, client_for, make_memory, personal):
    now = timezone.now()
    make_memory(personal, "first placed", created_at=now - timedelta(days=2))
    make_memory(personal, "second placed", created_at=now - timedelta(days=1))
    html = client_for(alice).get("/palace/?sort=route").content.decode()
    assert html.index("first placed") < html.index("second placed")
    newest = client_for(alice).get("/palace/").content.decode()
    assert newest.index("second placed") < newest.index("first placed")


@pytest.mark.parametrize("count", [4, 40])
def test_list_query_count_is_pinned(count, alice, client_for, make_memory, personal, django_assert_num_queries):
    for i in range(count):
        make_memory(personal, f"note {i}", kind=["fact", "skill"][i % 2], log=False)
    client = client_for(alice)
    client.get("/palace/")
    # session, user, memberships, due count (3), rows with slot and room, their open contradictions
    with django_assert_num_queries(8):
        client.get("/palace/")


def test_search_shows_how_each_hit_was_found(alice, client_for, make_memory, personal):
    make_memory(personal, "Carol owns the billing service", placard="billing owner")
    make_memory(personal, "The office has a new coffee machine")
    html = client_for(alice).get("/palace/?q=billing", HTTP_HX_REQUEST="true").content.decode()
    assert "billing service" in html and "coffee machine" not in html
    assert "lex#1" in html and "search" in html


def test_edit_goes_through_the_supersede_chain(alice, client_for, make_memory, personal):
    old = make_memory(personal, "Bob owns the billing service", placard="billing owner")
    client = client_for(alice)
    response = client.post(
        f"/palace/m/{old.pk}/edit/",
        {"content": "Carol owns the billing service", "placard": "billing owner", "version": old.version},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    body = response.content.decode()
    new = Memory.objects.get(supersedes=old)
    old.refresh_from_db()
    assert old.status == "superseded" and new.content == "Carol owns the billing service" and new.slot_id == old.slot_id
    assert "Supersede chain" in body and f"#{old.pk}" in body and "<html" not in body
    # The chain is stored on the new version and on its op row; the old version is the only one it replaces.
    row = OpLog.objects.get(op="memory.update", target_id=new.pk)
    assert (row.detail["supersedes"], row.detail["from_version"]) == (old.pk, old.version)
    assert new.version == old.version + 1 and new.supersedes_id == old.pk
    assert list(Memory.objects.filter(palace=personal, status="active")) == [new]


def test_edit_with_bad_input_or_stale_version_is_refused(alice, client_for, make_memory, personal):
    memory = make_memory(personal, "Bob owns the billing service")
    client = client_for(alice)
    empty = client.post(f"/palace/m/{memory.pk}/edit/", {"content": "", "version": 1})
    assert empty.status_code == 422 and b"Please correct" in empty.content
    stale = client.post(f"/palace/m/{memory.pk}/edit/", {"content": "Carol owns it now", "version": 9})
    assert stale.status_code == 409
    assert Memory.objects.filter(palace=personal).count() == 1


def test_forget_and_restore(alice, client_for, make_memory, personal):
    memory = make_memory(personal, "The wifi password rotates weekly")
    client = client_for(alice)
    assert client.post(f"/palace/m/{memory.pk}/forget/", {"reason": "outdated"}).status_code == 302
    memory.refresh_from_db()
    assert memory.status == "forgotten" and memory.epitaph == "outdated"
    restored = client.post(f"/palace/m/{memory.pk}/restore/", HTTP_HX_REQUEST="true")
    assert restored.status_code == 200 and "<html" not in restored.content.decode()
    memory.refresh_from_db()
    assert memory.status == "active"
    assert OpLog.objects.filter(op__in=["memory.forget", "memory.restore"], target_id=memory.pk).count() == 2


def test_batch_forget_then_restore(alice, client_for, make_memory, personal):
    ids = [make_memory(personal, f"batch note {i}").pk for i in range(3)]
    client = client_for(alice)
    assert client.post("/palace/batch/", {"action": "forget", "ids": ids[:2]}).status_code == 302
    assert sorted(Memory.objects.filter(status="forgotten").values_list("pk", flat=True)) == sorted(ids[:2])
    assert client.post("/palace/batch/", {"action": "restore", "ids": ids[:2]}).status_code == 302
    assert Memory.objects.filter(status="active").count() == 3
    assert client.post("/palace/batch/", {"action": "explode", "ids": ids}).status_code == 422


def test_batch_with_an_outsiders_memory_changes_nothing(alice, charlie, client_for, make_memory, personal):
    mine = make_memory(personal, "alice's own note")
    theirs_client = client_for(charlie)
    assert theirs_client.post("/palace/batch/", {"action": "forget", "ids": [mine.pk]}).status_code == 404
    mine.refresh_from_db()
    assert mine.status == "active"


def test_route_pages_walk_every_memory_once_in_route_order(alice, client_for, make_memory, personal):
    for i in range(60):
        make_memory(personal, f"stop {i:02d}", kind=["fact", "skill", "episode"][i % 3], log=False)
    client = client_for(alice)
    seen: list[str] = []
    html = client.get("/palace/?sort=route").content.decode()
    while True:
        seen += [part.split("<")[0] for part in html.split('<p class="text">')[1:]]
        if "after=" not in html:
            break
        cursor = html.split("after=")[1].split('"')[0].split("&")[0]
        html = client.get(f"/palace/?sort=route&after={cursor}", HTTP_HX_REQUEST="true").content.decode()
    assert seen == [f"stop {i:02d}" for i in range(60)]


def test_stored_text_is_escaped_in_rows_and_log(alice, client_for, make_memory, personal, system):
    """The list rows are written in Python (panel/rows.py): every stored text must still come out escaped."""
    from django.db import transaction

    from palace.oplog import oplog_write

    evil = '<script>alert("x")</script>'
    make_memory(personal, f"content {evil}", placard=f"placard {evil}")
    with transaction.atomic():
        oplog_write(
            op="memory.forget",
            actor=system,
            palace=personal,
            target_kind="memory",
            target_id=1,
            reason=evil,
            detail={"note": evil},
        )
    client = client_for(alice)
    for url in ("/palace/", "/log/", "/today/?part=rooms", "/corridor/rooms/"):
        html = client.get(url).content.decode()
        assert "<script>alert" not in html, url
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html, url


def test_a_row_in_an_open_contradiction_carries_a_badge_to_judge(alice, client_for, make_memory, personal):
    from memory.models import Edge

    older = make_memory(personal, "The API listens on port 8000")
    newer = make_memory(personal, "The API listens on port 8001")
    calm = make_memory(personal, "Backups run nightly")
    edge = Edge.objects.create(
        palace=personal, from_memory=newer, to_memory=older, kind="contradicts", status="pending"
    )
    settled = make_memory(personal, "Tea, not coffee", kind="preference")
    Edge.objects.create(palace=personal, from_memory=settled, to_memory=calm, kind="contradicts", status="dismissed")
    html = client_for(alice).get("/palace/").content.decode()
    rows = {m.pk: html[html.index(f'id="m-{m.pk}"') :].split("</li>")[0] for m in (older, newer, calm, settled)}
    badge = f'<a class="badge contested" href="/judge/#edge-{edge.pk}"'
    assert badge in rows[older.pk] and badge in rows[newer.pk]
    assert "contested" not in rows[calm.pk] and "contested" not in rows[settled.pk]
    zh = client_for(alice).get("/palace/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert zh.count(">有矛盾</a>") == 2


def test_both_scope_names_the_palace_once_per_run_of_rows(alice, client_for, make_memory, personal, project):
    start = timezone.now() - timedelta(hours=1)
    for i, palace in enumerate([project, project, personal, personal, personal]):
        make_memory(palace, f"memory {i}", created_at=start + timedelta(minutes=i), log=False)
    client = client_for(alice)
    client.post("/scope/", {"mode": "both", "project": project.pk, "next": "/palace/"})
    html = client.get("/palace/").content.decode()
    heads = re.findall(r'<li class="palace-head" aria-hidden="true">([^<]+)</li>', html)
    assert heads == ["my palace", project.origin_key]  # newest first: three of mine, then two of the project
    assert html.count('<span class="sr-only">my palace</span>') == 3  # still said on every row to a screen reader
    client.post("/scope/", {"mode": "mine", "next": "/palace/"})
    assert "palace-head" not in client.get("/palace/").content.decode()
