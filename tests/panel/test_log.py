"""Log: the op log of the chosen scope, readable rows, category filter, keyset pages, pinned query counts."""

from __future__ import annotations

import pytest
from django.db import transaction

from palace.oplog import oplog_write


def scope_to(client, mode, project=None):
    data = {"mode": mode, "next": "/log/"}
    if project is not None:
        data["project"] = project.pk
    return client.post("/scope/", data)


def write_ops(palace, actor, n, op="memory.save"):
    with transaction.atomic():
        for i in range(n):
            oplog_write(
                op=op,
                actor=actor,
                palace=palace,
                target_kind="memory",
                target_id=1000 + i,
                reason="",
                detail={"kind": "fact", "disposition": "accept"},
            )


def test_log_shows_readable_rows_of_the_chosen_scope_only(alice, project, personal, client_for, system):
    write_ops(project, system, 2)
    write_ops(personal, system, 1, op="memory.forget")
    client = client_for(alice)
    mine = client.get("/log/").content.decode()
    assert "Forgot a memory" in mine and "Saved a memory" not in mine
    assert "memory.forget" not in mine and "{" not in mine.split("log-rows")[1].split("</ol>")[0]
    scope_to(client, "project", project)
    theirs = client.get("/log/").content.decode()
    assert theirs.count("Saved a memory") == 2 and "Forgot a memory" not in theirs
    assert "outcome</em> accept" in theirs  # detail shown as label + value, not JSON
    scope_to(client, "both", project)
    both = client.get("/log/").content.decode()
    assert "Saved a memory" in both and "Forgot a memory" in both


def test_category_filter_and_htmx_partial(alice, personal, client_for, system):
    write_ops(personal, system, 1, op="memory.save")
    write_ops(personal, system, 1, op="review.grade")
    write_ops(personal, system, 1, op="room.open")
    client = client_for(alice)
    response = client.get("/log/?category=retrieval", HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert "<html" not in body and 'id="log"' in body
    assert "Graded a review" in body and "Saved a memory" not in body and "Opened a new room" not in body
    assert "HX-Request" in response["Vary"]
    organize = client.get("/log/?category=organize").content.decode()
    assert "Opened a new room" in organize and "Graded a review" not in organize


def test_outsider_cannot_scope_to_a_project_they_do_not_belong_to(alice, charlie, project, client_for, system):
    write_ops(project, system, 1)
    outsider = client_for(charlie)
    assert scope_to(outsider, "project", project).status_code == 404
    assert "Saved a memory" not in outsider.get("/log/").content.decode()
    owner = client_for(alice)
    assert scope_to(owner, "project", project).status_code == 302  # positive control
    assert "Saved a memory" in owner.get("/log/").content.decode()


def test_log_pages_with_a_keyset_cursor(alice, personal, client_for, system):
    write_ops(personal, system, 120)
    client = client_for(alice)
    first = client.get("/log/").content.decode()
    assert first.count('class="row logrow"') == 50
    cursor = first.split("before=")[1].split('"')[0]
    second = client.get(f"/log/?before={cursor}", HTTP_HX_REQUEST="true").content.decode()
    assert second.count('class="row logrow"') == 50 and "<html" not in second and 'id="log"' not in second


@pytest.mark.parametrize("rows", [3, 60])
def test_log_query_count_does_not_grow_with_rows(rows, alice, personal, client_for, system, django_assert_num_queries):
    write_ops(personal, system, rows)
    client = client_for(alice)
    client.get("/log/")  # warm caches (content types, translations)
    # session, user, scope memberships, due count (3), rows, week counts
    with django_assert_num_queries(8):
        client.get("/log/")


def test_correction_and_restore_details_read_in_chinese(alice, client_for, personal, system):
    with transaction.atomic():
        oplog_write(
            op="memory.update",
            actor=system,
            palace=personal,
            target_kind="memory",
            target_id=7,
            detail={"from_version": 1, "version": 2},
        )
        oplog_write(
            op="memory.restore",
            actor=system,
            palace=personal,
            target_kind="memory",
            target_id=7,
            detail={"from_status": "forgotten"},
        )
    html = client_for(alice).get("/log/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "<em>原版本</em> 1" in html and "<em>版本</em> 2" in html
    assert "<em>原状态</em> 已遗忘" in html and "forgotten" not in html


def test_details_read_as_people_write_them_with_the_raw_value_in_the_tooltip(alice, client_for, personal, system):
    """Ids as #44, a stored ISO moment as a date in the page's language; the raw JSON stays in the title."""
    with transaction.atomic():
        oplog_write(
            op="memory.save",
            actor=system,
            palace=personal,
            target_kind="memory",
            target_id=7,
            detail={
                "kind": "fact",
                "edges": [3],
                "judged_by": ["rules"],
                "entities": {"by": "rules", "linked": [44, 48], "created": []},
            },
        )
        oplog_write(
            op="fact.write",
            actor=system,
            palace=personal,
            target_kind="fact",
            target_id=9,
            detail={"entity": 44, "predicate": "works_on", "valid_from": "2026-10-01T00:00:00+00:00"},
        )
    client = client_for(alice)
    html = client.get("/log/").content.decode()
    rows = html.split('id="log-rows"')[1].split("</ol>")[0]
    assert "<em>entities</em> found by rules · linked #44, #48</span>" in rows
    assert "<em>edges</em> #3</span>" in rows and "<em>valid from</em> Oct. 1, 2026</span>" in rows
    for leak in ("[44", "created []", "2026-10-01T00:00", "[3]"):
        assert leak not in _visible(rows), leak
    assert 'title="&quot;2026-10-01T00:00:00+00:00&quot;"' in rows  # the raw value, reachable
    assert 'title="{&quot;by&quot;: &quot;rules&quot;, &quot;linked&quot;: [44, 48], &quot;created&quot;: []}"' in rows
    zh = client.get("/log/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "<em>生效于</em> 2026年10月1日</span>" in zh and "<em>实体</em> 识别方 规则 · 已关联 #44, #48</span>" in zh
    assert (
        "写入了一条事实" in zh
        and "<em>谓词</em> works_on" in zh
        and "<em>关联</em> #3" in zh
        and "<em>判定方</em> 规则" in zh
    )


def _visible(html: str) -> str:
    """The text a reader sees: attribute values (the tooltips) removed."""
    import re

    return re.sub(r'\s[a-z-]+="[^"]*"', "", html)
