"""Issue 24, medium 4, as it was found: a lossless import kept the document's op rows as they were (actor, time,
target), so mallory could import history "by alice" that names a memory in carol's personal palace, and an admin's
bulk revert of "alice's changes that day" then forgot carol's memory. Imported history is now a read-only record
(actor kind `import`, written now, targets remapped or dropped), and a revert refuses a row whose memory is in another
palace than the row's; the console and the bulk preview name each row's palace."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import time_machine
from django.contrib.auth.models import Permission
from django.test import Client

from memory.audit import revert as restore
from memory.lifecycle import memory_forget
from memory.models import Memory
from memory.save import memory_save
from palace.actors import Actor
from palace.models import OpLog, Palace

DAY = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
BULK = "/admin/memory/memory/bulk-revert/"


def make_staff(make_user: Callable[..., Any], name: str, *codenames: str) -> Any:
    user = make_user(name)
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="memory", codename__in=codenames))
    return type(user).objects.get(pk=user.pk)  # a fresh object: permissions are cached per instance


def _saved(palace: Palace, user: Any, text: str) -> Memory:
    memory = memory_save(palace=palace, actor=Actor.for_user(user), content=text, kind="fact").memory
    assert memory is not None
    return memory


def _forged_row(*, op: str, target_id: int, actor: str = "alice") -> dict[str, Any]:
    return {
        "id": 900001,
        "op": op,
        "actor_kind": "user",
        "actor_user": actor,
        "actor_token_id": None,
        "actor_token_label": "",
        "actor_name": actor,
        "target_kind": "memory",
        "target_id": target_id,
        "reason": "routine cleanup",
        "detail": {"reverts": 1},
        "request_id": "",
        "created_at": DAY.isoformat(),
    }


def test_forged_history_by_alice_imported_by_mallory_cannot_steer_a_bulk_revert_into_carols_palace(
    alice: Any, make_user: Callable[..., Any], token_for: Any, bearer: Any
) -> None:
    carol, mallory = make_user("carol"), make_user("mallory")
    keeper = make_staff(make_user, "keeper", "view_memory", "restore_memory")
    with time_machine.travel(DAY - timedelta(days=1), tick=False):
        mine = _saved(alice.personal_palace, alice, "The staging database is rebuilt every Monday.")
    with time_machine.travel(DAY, tick=False):
        memory_forget(memory_id=mine.pk, actor=Actor.for_user(alice), reason="tidy")  # alice's real change
        theirs = _saved(carol.personal_palace, carol, "Carol's dentist appointment is on Friday at 10.")
    with time_machine.travel(DAY + timedelta(hours=2), tick=False):
        # mallory's own (empty) export, with a row "by alice" that day, saving carol's memory: its revert forgets it.
        document = json.loads(Client().get("/api/v1/export", **bearer(token_for(mallory))).getvalue())
        (section,) = document["palaces"]
        section["oplog"].append(_forged_row(op="memory.save", target_id=theirs.pk))
        answer = Client().post(
            "/api/v1/import", document, content_type="application/json", **bearer(token_for(mallory))
        )
    assert answer.status_code == 200, answer.content
    record = OpLog.objects.get(palace=mallory.personal_palace, op="memory.save")
    # The stored record: mallory's import, written when it came, pointing nowhere; what the file said kept aside.
    assert (record.actor_kind, record.actor_user_id, record.actor_name) == ("import", mallory.pk, "import")
    assert record.target_id is None and record.created_at == DAY + timedelta(hours=2)
    assert record.detail["imported"]["actor_user"] == "alice" and record.detail["imported"]["target_id"] == theirs.pk
    assert "reverts" not in record.detail  # a nested `reverts` marks no row of this server as already reverted

    selection = restore.Selection(since=DAY - timedelta(hours=1), until=DAY + timedelta(days=1), user_id=alice.pk)
    preview = restore.bulk_revert_preview(selection=selection, staff=keeper)
    assert record.pk not in [p.op_id for p in preview.plans]  # not alice's change: it is the import's record
    result = restore.bulk_revert_apply(selection=selection, staff=keeper, reason="alice's bad day")
    theirs.refresh_from_db()
    mine.refresh_from_db()
    assert theirs.status == "active"  # carol's memory untouched
    assert mine.status == "active" and [p.memory_id for p in result.done] == [mine.pk]  # the control: alice's revert
    # Selected on its own (by id), the record still plans nothing.
    plan = restore.op_revert_preview(op_id=record.pk, staff=keeper)
    assert not plan.doable and "imported record" in plan.refused and plan.palace == "personal palace of mallory"


def test_a_row_naming_a_memory_of_another_palace_is_refused_and_the_console_names_the_palaces(
    alice: Any, make_user: Callable[..., Any]
) -> None:
    carol = make_user("carol")
    keeper = make_staff(make_user, "keeper", "view_memory", "restore_memory")
    with time_machine.travel(DAY - timedelta(days=1), tick=False):  # the saves: outside the range reverted below
        mine = _saved(alice.personal_palace, alice, "The release branch is cut on Wednesdays.")
        theirs = _saved(carol.personal_palace, carol, "Carol's locker code is on the fridge.")
    with time_machine.travel(DAY, tick=False):
        for memory in (mine, theirs):
            memory_forget(memory_id=memory.pk, actor=Actor.for_user(carol if memory is theirs else alice), reason="x")
        # A row in alice's palace that names carol's memory (written straight to the table: no service writes one).
        crafted = OpLog.objects.create(
            op="memory.forget", actor_kind="user", actor_user=alice, actor_name="alice",
            palace=alice.personal_palace, target_kind="memory", target_id=theirs.pk,
        )  # fmt: skip
    normal = OpLog.objects.get(op="memory.forget", target_id=mine.pk)
    refused = restore.op_revert_preview(op_id=crafted.pk, staff=keeper)
    assert not refused.doable
    assert refused.refused == (
        f"memory #{theirs.pk} is in another palace (personal palace of carol) than the op row (personal palace of "
        "alice): a row never changes another palace's rows"
    )
    fine = restore.op_revert_preview(op_id=normal.pk, staff=keeper)  # the control
    assert fine.doable and fine.memory_id == mine.pk and fine.palace == "personal palace of alice"

    browser = Client()
    browser.force_login(keeper)
    page = browser.get(f"/admin/memory/memory/revert/{crafted.pk}/").content.decode()
    assert (
        'id="revert-palace">personal palace of alice<' in page and "another palace (personal palace of carol)" in page
    )
    since, until = (crafted.created_at - timedelta(minutes=5)).isoformat(), (crafted.created_at + timedelta(minutes=5))
    preview = browser.get(BULK, {"actor": "alice", "since": since, "until": until.isoformat()}).content.decode()
    refused_list = preview.split('id="bulk-refused"')[1]
    assert f"op #{crafted.pk} <code>memory.forget</code> in" in refused_list
    assert "another palace (personal palace of carol)" in refused_list
    changes = preview.split('id="bulk-changes"')[1].split('id="bulk-refused"')[0]
    assert f'op #{normal.pk} <code>memory.forget</code> in <span class="bulk-palace">personal palace of alice' in (
        changes
    )
    with_apply = restore.bulk_revert_apply(
        selection=restore.Selection(since=crafted.created_at - timedelta(minutes=5), until=until, user_id=alice.pk),
        staff=keeper,
        reason="undo",
    )
    theirs.refresh_from_db()
    mine.refresh_from_db()
    assert theirs.status == "forgotten" and mine.status == "active"
    assert [p.op_id for p in with_apply.refused] == [crafted.pk]


def test_an_entity_row_naming_another_palaces_entity_is_refused(alice: Any, make_user: Callable[..., Any]) -> None:
    """The other kinds too: a rename row of alice's palace naming carol's entity plans nothing; the same row in
    carol's palace (the control) plans the rename back."""
    from memory.knowledge import entity_rename
    from tests.entity_rows import make_entity

    carol = make_user("carol")
    keeper = make_staff(make_user, "keeper", "view_memory", "restore_memory", "change_entity")
    theirs = make_entity(carol.personal_palace, "Dentist")
    entity_rename(entity_id=theirs.pk, name="Dr Lee", actor=Actor.for_user(carol))
    real = OpLog.objects.filter(op="entity.rename", target_id=theirs.pk).latest("pk")
    crafted = OpLog.objects.create(
        op="entity.rename", actor_kind="user", actor_user=alice, actor_name="alice", palace=alice.personal_palace,
        target_kind="entity", target_id=theirs.pk, detail=real.detail,
    )  # fmt: skip
    plan = restore.op_revert_preview(op_id=crafted.pk, staff=keeper)
    assert not plan.doable and "another palace (personal palace of carol)" in plan.refused
    control = restore.op_revert_preview(op_id=real.pk, staff=keeper)
    assert control.doable and control.palace == "personal palace of carol", control.refused
