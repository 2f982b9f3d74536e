"""Row-level security (palace/rls.py and the policies of palace 0004, memory 0009, review 0002): the database itself
hides the rows of palaces the acting user is not a member of, on the app's own connection, whatever the query.
Every palace-scoped table, from the catalogue, is tested persona by persona in test_rls_tables.py; the doors that
reuse a connection in test_rls_doors.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.core import checks
from django.db import connection, transaction

from memory.models import Edge, Memory
from memory.search import SearchRequest, memory_search
from palace import rls
from palace.actors import Actor
from palace.models import Membership, Palace
from palace.oplog import oplog_write
from palace.services import member_set
from review.services import review_grade
from tests.fakes.memories import make_memory


def _count(table: str, where: str = "", params: list[Any] | None = None) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table} {where}", params or [])  # noqa: S608 - test constants
        return int(cursor.fetchone()[0])


def _ids(table: str) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {table}")  # noqa: S608
        return {int(row[0]) for row in cursor.fetchall()}


@pytest.fixture
def world(alice: Any, bob: Any, charlie: Any, project: Palace) -> dict[str, Any]:
    """Rows in every covered table: alice's personal palace, the project (alice owner, bob viewer), bob's and
    charlie's personal palaces."""
    palaces = {name: Palace.objects.get(personal_owner=user) for name, user in [("alice", alice), ("bob", bob)]}
    palaces["charlie"] = Palace.objects.get(personal_owner=charlie)
    palaces["project"] = project
    mine = [make_memory(palaces["alice"], f"alice note {i} about lanterns") for i in range(2)]
    shared = make_memory(project, "the project deploys with lanterns")
    bobs = make_memory(palaces["bob"], "bob keeps lanterns too")
    charlies = make_memory(palaces["charlie"], "charlie lanterns secret")
    Edge.objects.create(palace=palaces["alice"], from_memory=mine[0], to_memory=mine[1], kind="related")
    Edge.objects.create(palace=palaces["charlie"], from_memory=charlies, to_memory=charlies, kind="related")
    for user, memory in [(alice, mine[0]), (charlie, charlies)]:
        review_grade(memory_id=memory.pk, grade=4, actor=Actor.for_user(user))
        memory_search(user=user, request=SearchRequest(query="lanterns"))  # access records and an evidence batch
    oplog_write(op="test.note", actor=Actor.for_system("tests"), palace=palaces["charlie"])
    return {"palaces": palaces, "mine": mine, "shared": shared, "bobs": bobs, "charlies": charlies}


def test_the_app_connects_as_a_role_that_row_level_security_binds(db: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
        role, superuser, bypass = cursor.fetchone()
    assert role == "atrium"
    assert (superuser, bypass) == (False, False)


def test_a_user_sees_exactly_the_rows_of_their_palaces(world: dict[str, Any], alice: Any, bob: Any) -> None:
    readable = {
        "alice": {world["palaces"]["alice"].pk, world["palaces"]["project"].pk},
        "bob": {world["palaces"]["bob"].pk, world["palaces"]["project"].pk},
    }
    for name, user in [("alice", alice), ("bob", bob)]:
        expected = set(Memory.objects.filter(palace_id__in=readable[name]).values_list("pk", flat=True))
        with rls.acting_as(user):
            assert _ids("memory_memory") == expected
            for table in ("memory_edge", "palace_slot", "palace_room", "palace_tourstop", "review_reviewcard"):
                with connection.cursor() as cursor:
                    cursor.execute(f"SELECT DISTINCT palace_id FROM {table}")  # noqa: S608
                    assert {row[0] for row in cursor.fetchall()} <= readable[name], table
    with rls.acting_as(alice):
        assert _count("memory_memory") == 3  # her two and the project's: the positive control
        assert world["charlies"].pk not in _ids("memory_memory")
        assert _count("memory_searchbatch") == 1  # her own evidence batch, not charlie's
        assert _count("palace_oplog", "WHERE palace_id = %s", [world["palaces"]["charlie"].pk]) == 0
        assert _count("palace_oplog", "WHERE palace_id = %s", [world["palaces"]["alice"].pk]) > 0


def test_a_viewer_cannot_update_a_project_memory_through_raw_sql_an_editor_can(
    world: dict[str, Any], bob: Any, system: Actor
) -> None:
    shared = world["shared"]
    update = "UPDATE memory_memory SET importance = 0.99 WHERE id = %s"
    with rls.acting_as(bob):
        assert _count("memory_memory", "WHERE id = %s", [shared.pk]) == 1  # he reads it
        with connection.cursor() as cursor:
            cursor.execute(update, [shared.pk])
            assert cursor.rowcount == 0
            cursor.execute("UPDATE memory_memory SET importance = 0.99 WHERE id = %s", [world["charlies"].pk])
            assert cursor.rowcount == 0
    shared.refresh_from_db()
    assert shared.importance != 0.99
    member_set(palace=world["palaces"]["project"], user=bob, role=Membership.Role.EDITOR, actor=system)
    with rls.acting_as(bob), connection.cursor() as cursor:
        cursor.execute(update, [shared.pk])
        assert cursor.rowcount == 1
    shared.refresh_from_db()
    assert shared.importance == 0.99


def test_a_viewer_may_not_insert_into_a_project_but_may_record_a_read_of_it(world: dict[str, Any], bob: Any) -> None:
    """The policies: a viewer writes no project rows, but an access record of a memory they can read is allowed
    (search no longer writes one for a viewer: their searches leave a project's ranking state alone, issue 12
    defect 3; the policy still admits the audit row) and their own evidence batch is theirs."""
    project = world["palaces"]["project"]
    before = _count("memory_accessrecord", "WHERE user_id = %s", [bob.pk])
    record = (
        "INSERT INTO memory_accessrecord (memory_id, user_id, batch, rank, via, created_at)"
        " VALUES (%s, %s, '', 1, 'search', now())"
    )
    with rls.acting_as(bob):
        result = memory_search(user=bob, request=SearchRequest(query="deploys lanterns", palace_ids=[project.pk]))
        assert [hit.memory.pk for hit in result.hits] == [world["shared"].pk]
        assert result.batch is not None
        with pytest.raises(Exception, match="row-level security"), transaction.atomic():
            Edge.objects.create(palace=project, from_memory=world["shared"], to_memory=world["shared"], kind="related")
        with pytest.raises(Exception, match="row-level security"), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(record, [world["charlies"].pk, bob.pk])  # a memory bob cannot read: refused
        with connection.cursor() as cursor:
            cursor.execute(record, [world["shared"].pk, bob.pk])  # one he can read: admitted
    assert _count("memory_accessrecord", "WHERE user_id = %s", [bob.pk]) == before + 1


def test_contexts_nest_and_restore_on_error(alice: Any, bob: Any) -> None:
    assert rls.current().system == "tests"
    with pytest.raises(RuntimeError), rls.acting_as(alice):
        assert rls.current().user_id == alice.pk
        with rls.acting_as(bob):
            assert rls.current().user_id == bob.pk
        assert rls.current().user_id == alice.pk
        raise RuntimeError
    assert rls.current().system == "tests"
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('atrium.user_id', true), current_setting('atrium.system', true)")
        assert cursor.fetchone() == ("", "tests")


@pytest.mark.django_db(transaction=True)
def test_a_context_left_inside_a_transaction_that_rolls_back_is_written_again_when_the_scope_ends(alice: Any) -> None:
    """A session setting written inside a transaction is undone by its rollback: here alice's context, entered in
    autocommit and left inside a transaction that fails, comes back on the session. The connection must not be
    taken to hold nobody then: the scope's end writes it again (palace/rls.py, point 2)."""
    make_memory(Palace.objects.get(personal_owner=alice), "alice's own note")
    with rls.acting_as_nobody():
        with rls.scope():
            level = rls.depth()
            rls.enter_as(alice)
            assert _count("memory_memory") == 1  # the positive control: her row, under her context
            with pytest.raises(RuntimeError), transaction.atomic():
                rls.leave_to(level)
                assert _count("memory_memory") == 0
                raise RuntimeError  # rolled back: the session acts as alice again
        assert _count("memory_memory") == 0
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('atrium.user_id', true), current_setting('atrium.system', true)")
            assert cursor.fetchone() == ("", "")


def test_the_database_role_check_warns_when_row_level_security_would_be_off(db: Any, monkeypatch: Any) -> None:
    from config import checks as atrium_checks

    assert atrium_checks.check_database_role(databases=["default"]) == []  # the app's role: nothing to say
    monkeypatch.setattr(atrium_checks, "_role_flags", lambda alias: ("postgres", True, False))
    found = atrium_checks.check_database_role(databases=["default"])
    assert [message.id for message in found] == ["atrium.W001"]
    assert found[0].level == checks.WARNING
    assert "row-level security" in found[0].msg


def _shell(code: str, **extra_env: str) -> str:
    settings = connection.settings_dict
    url = f"postgresql://{quote(settings['USER'])}@/{quote(settings['NAME'])}?host={quote(settings['HOST'])}"
    env = {**os.environ, "DATABASE_URL": url, "ATRIUM_EMBEDDED_POSTGRES": "0", **extra_env}
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "config.cli", "shell", "-c", code],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


SHELL_CODE = """
from django.contrib.auth import get_user_model
from django.db import connection
from palace.rls import acting_as
def count():
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memory_memory")
        return cursor.fetchone()[0]
print("outside", count())
with acting_as(get_user_model().objects.get(username="alice")):
    print("alice", count())
print("after", count())
"""


@pytest.mark.slow
def test_atrium_shell_sees_no_memories_without_a_context_and_only_alices_inside_hers(
    transactional_db: Any, alice: Any, bob: Any
) -> None:
    alices = Palace.objects.get(personal_owner=alice)
    for i in range(3):
        make_memory(alices, f"alice secret {i}")
    make_memory(Palace.objects.get(personal_owner=bob), "bob secret")
    assert Memory.objects.count() == 4  # they exist (the tests act as the system)
    # The shell's sessions arrive acting as the system (libpq reads PGOPTIONS), as a pooled or misconfigured
    # connection might: the shell still acts as nobody, because a new connection is told who acts (palace/rls.py).
    printed = [line.split() for line in _shell(SHELL_CODE, PGOPTIONS="-c atrium.system=from-pgoptions").splitlines()]
    lines = {words[0]: words[1] for words in printed if len(words) == 2 and words[0] in {"outside", "alice", "after"}}
    assert lines == {"outside": "0", "alice": "3", "after": "0"}


def test_the_full_text_match_is_leakproof_so_its_index_serves_queries_under_the_policies(db: Any) -> None:
    """Under row-level security only LEAKPROOF functions may be evaluated before the policies, i.e. through an
    index: without this the full-text arm tests every memory of the palaces searched (ops/embedded.py)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT proleakproof FROM pg_proc WHERE proname = 'ts_match_vq'")
        assert cursor.fetchone() == (True,)
        cursor.execute("SELECT proleakproof FROM pg_proc WHERE proname = 'int8eq'")
        assert cursor.fetchone() == (True,)  # control: the palace filter's operator is leakproof by PostgreSQL
