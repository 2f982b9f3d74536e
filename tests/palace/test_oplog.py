"""The op log is append-only, written in the mutation's transaction."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.db.utils import DatabaseError

from palace.actors import Actor
from palace.models import OpLog, Palace
from palace.oplog import OpLogOutsideTransaction, oplog_write
from palace.services import project_create


def test_rows_cannot_be_updated_or_deleted_even_with_raw_sql(alice: Any) -> None:
    row = OpLog.objects.filter(op="palace.create", palace__personal_owner=alice).get()
    for sql in (
        "UPDATE palace_oplog SET reason = 'rewritten' WHERE id = %s",
        "DELETE FROM palace_oplog WHERE id = %s",
    ):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cur:
            cur.execute(sql, [row.pk])
    row.refresh_from_db()
    assert row.reason == "personal palace for a new user"
    # positive control: inserting still works
    with transaction.atomic():
        oplog_write(op="test.append", actor=Actor.for_system("tests"))
    assert OpLog.objects.filter(op="test.append").count() == 1


def test_orm_delete_is_refused_too(alice: Any) -> None:
    with pytest.raises(DatabaseError), transaction.atomic():
        OpLog.objects.all().delete()
    assert OpLog.objects.count() > 0


def test_writing_outside_a_transaction_is_refused(transactional_db: Any) -> None:
    with pytest.raises(OpLogOutsideTransaction):
        oplog_write(op="test.loose", actor=Actor.for_system("tests"))


def test_an_op_row_rolls_back_with_its_mutation(alice: Any, system: Actor) -> None:
    before = OpLog.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        project_create(origin="https://github.com/atrium-test/rollback", owner=alice, actor=system)
        raise RuntimeError("boom")
    assert OpLog.objects.count() == before
    assert not Palace.objects.filter(origin_key="github.com/atrium-test/rollback").exists()


def test_rows_record_actor_target_and_request_id(alice: Any) -> None:
    from palace.oplog import request_id_var

    token = request_id_var.set("req-123")
    try:
        with transaction.atomic():
            row = oplog_write(
                op="test.who",
                actor=Actor.for_token(alice, 7, "laptop"),
                target_kind="memory",
                target_id=42,
                reason="because",
                detail={"k": "v"},
            )
    finally:
        request_id_var.reset(token)
    row.refresh_from_db()
    assert (row.actor_kind, row.actor_user_id, row.actor_token_id, row.actor_token_label) == (
        "token",
        alice.pk,
        7,
        "laptop",
    )
    assert (row.target_kind, row.target_id, row.reason, row.detail, row.request_id) == (
        "memory",
        42,
        "because",
        {"k": "v"},
        "req-123",
    )


def test_one_page_query_for_every_door(alice: Any, charlie: Any, system: Actor) -> None:
    """palace.selectors.oplog_page: the given palaces, or every readable palace plus the user's own account rows;
    op name or prefix, category, keyset pages."""
    from palace.selectors import oplog_page

    mine = Palace.objects.get(personal_owner=alice)
    theirs = Palace.objects.get(personal_owner=charlie)
    with transaction.atomic():
        for op in ("memory.save", "memory.forget", "review.grade", "room.open"):
            oplog_write(op=op, actor=system, palace=mine)
        oplog_write(op="memory.save", actor=system, palace=theirs)
        oplog_write(op="token.create", actor=Actor.for_user(alice))  # account-level: no palace
    everything = oplog_page(user=alice, limit=200)
    assert {r.palace_id for r in everything.items} == {mine.pk, None}  # never charlie's
    assert any(r.op == "token.create" for r in everything.items)
    given = oplog_page(user=alice, palaces=[mine], limit=200)
    assert all(r.palace_id == mine.pk for r in given.items) and len(given.items) == len(everything.items) - 1
    assert [r.op for r in oplog_page(user=alice, palaces=[mine], op="memory.").items] == [
        "memory.forget",
        "memory.save",
    ]
    assert [r.op for r in oplog_page(user=alice, palaces=[mine], op="memory.save").items] == ["memory.save"]
    assert [r.op for r in oplog_page(user=alice, palaces=[mine], category="retrieval").items] == ["review.grade"]
    first = oplog_page(user=alice, palaces=[mine], limit=2)
    rest = oplog_page(user=alice, palaces=[mine], before=first.next_before, limit=200)
    assert [r.pk for r in first.items + rest.items] == [r.pk for r in given.items] and rest.next_before is None
    assert oplog_page(user=charlie, palaces=[theirs], limit=200).items[0].op == "memory.save"  # control
