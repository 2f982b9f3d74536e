"""Row-level security, table by table, for every palace-scoped table the database has (palace/rls_sql.py and the
migrations that apply it): the list comes from the catalogue, not from this file, so a table added later is tested
the day it appears, and one added without policies fails here.

A table is palace-scoped when a foreign key leads from it to `palace_palace`, directly or through other
palace-scoped tables, when it has a `palace_id` column, or when it is already under row-level security; the access
tables themselves are the only exceptions (ACCESS_TABLES). For each one, alice's rows (in her personal palace) are
visible to alice and changeable by her, and invisible and unchangeable to bob (who shares a project with her, not
this palace), to charlie (who shares nothing) and to nobody; neither outsider can insert a row into her palace, and
she cannot move a row out of it into a palace she may not write. In the project, bob as a viewer reads every row
and changes none; as an editor he changes them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction

from capture.models import BackfillRun, CaptureSession, CaptureTurn
from memory.models import (
    Adjudication,
    DistillJob,
    DistillProposal,
    Edge,
    Entity,
    Fact,
    HandoffVersion,
    Memory,
    MemoryEntity,
    ProfileVersion,
)
from memory.search import SearchRequest, memory_search
from palace import rls
from palace.actors import Actor
from palace.models import Membership, Palace
from palace.oplog import oplog_write
from palace.services import member_set, project_create
from review.services import review_grade
from tests.fakes.memories import make_memory

# Tables that name a palace but carry no policy, and why.
ACCESS_TABLES = {
    "palace_membership": "the access table itself: every policy reads it to decide",
    "api_apitoken": "a person's tokens; `default_project` names a palace the access function checks on use",
    "accounts_usersettings": "a person's settings; `panel_project` (the panel's remembered scope) names a palace that "
    "panel.scope checks on use, as it checks a session's choice",
}
# Palace-scoped tables whose rows belong to one person rather than to a palace.
OWNED_BY_USER = {"memory_searchbatch": "user_id", "capture_backfillrun": "user_id"}
APPEND_ONLY = {"palace_oplog"}  # a trigger refuses UPDATE and DELETE for everyone (palace 0002)
# Rows a reader of the palace inserts: a record of their read, an op row of what they did (palace 0004, memory 0009).
READER_INSERTS = {"memory_accessrecord", "palace_oplog"}
# Rows private to the person who wrote them, even from the other members of their palace.
PRIVATE_TO_AUTHOR = {
    "memory_handoffversion": "user_id",
    "memory_distilljob": "user_id",
    "capture_capturesession": "user_id",
    "capture_captureturn": "session_id",  # through its session
}

Copier = Callable[[str, int, str | None, int | None], Callable[[], int | str]]
RLS_REFUSED = "42501"  # insufficient_privilege: "new row violates row-level security policy"


def palace_scoped_tables() -> dict[str, str]:
    """Every palace-scoped table (see the module docstring), mapped to an SQL expression giving a row's palace id
    (or, for OWNED_BY_USER, its owner's user id), evaluated with the row as `t`. A partitioned table (the op log,
    palace 0008) is tested through its parent, as every reader uses it; its partitions are left out here, and
    tests/palace/test_oplog_partitions.py checks them read directly."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT child.relname, a.attname, parent.relname
            FROM pg_constraint k
            JOIN pg_class child ON child.oid = k.conrelid
            JOIN pg_class parent ON parent.oid = k.confrelid
            JOIN pg_namespace n ON n.oid = child.relnamespace AND n.nspname = 'public'
            JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1]
            WHERE k.contype = 'f' AND NOT child.relispartition
            """
        )
        references = cursor.fetchall()
        cursor.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'"
            " WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relrowsecurity"
        )
        secured = {row[0] for row in cursor.fetchall()}
        cursor.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'"
            " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'palace_id' AND NOT a.attisdropped"
            " WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition"
        )
        named = {row[0] for row in cursor.fetchall()} - ACCESS_TABLES.keys()  # a palace id without a foreign key too
    owner: dict[str, str] = {"palace_palace": "t.id"}
    grew = True
    while grew:  # follow the foreign keys out from palace_palace until nothing new is reached
        grew = False
        for child, column, parent in sorted(references):
            if child in owner or child in ACCESS_TABLES or parent not in owner or parent == child:
                continue
            if parent == "palace_palace":
                owner[child] = f"t.{column}"
            else:
                owner[child] = f"(SELECT {owner[parent].replace('t.', 'p.')} FROM {parent} p WHERE p.id = t.{column})"
            grew = True
    del owner["palace_palace"]
    for table in named - owner.keys():
        owner[table] = "t.palace_id"
    for table in secured - owner.keys():
        owner[table] = f"t.{OWNED_BY_USER[table]}" if table in OWNED_BY_USER else "NULL"
    return owner


def _fill(palace: Palace, author: Any, word: str) -> None:
    """A row in every palace-scoped table for `palace`, written by `author` (an owner there), through the services
    where they are short (slotting, review, search, the op log) and the models otherwise."""
    first = make_memory(palace, f"{word}: where the lighthouse key is")
    second = make_memory(palace, f"{word}: the lighthouse key moved to the shed")
    Edge.objects.create(palace=palace, from_memory=first, to_memory=second, kind="contradicts", status="pending")
    review_grade(memory_id=first.pk, grade=4, actor=Actor.for_user(author))
    # An access record and an evidence batch.
    memory_search(user=author, request=SearchRequest(query="lighthouse key", palace_ids=[palace.pk]))
    oplog_write(op="test.note", actor=Actor.for_system("tests"), palace=palace)
    Adjudication.objects.create(palace=palace, verdict="defer", contradiction=True, new_memory=second, neighbour=first)
    DistillProposal.objects.create(
        palace=palace, kind="fact", member_ids=[first.pk, second.pk], content="the key moves", producer="rules"
    )
    key = Entity.objects.create(palace=palace, name="Lighthouse key", key="lighthouse key")
    MemoryEntity.objects.create(palace=palace, memory=first, entity=key)
    Fact.objects.create(palace=palace, entity=key, content="kept in the shed", source_memory=second)
    ProfileVersion.objects.create(palace=palace, version=1, content=f"{word} keeps keys", created_by=author)
    HandoffVersion.objects.create(palace=palace, user=author, version=1, doing="finding the key")
    DistillJob.objects.create(palace=palace, user=author, mode="suggest")
    session = CaptureSession.objects.create(user=author, palace=palace, key=f"{word}-session", client="generic")
    CaptureTurn.objects.create(session=session, index=0, role="user", text="where is the lighthouse key?")
    BackfillRun.objects.get_or_create(user=author)


@pytest.fixture
def world(alice: Any, bob: Any, charlie: Any, project: Palace, system: Actor) -> dict[str, Palace]:
    """Rows in every table for alice's personal palace, the project (alice owner, bob viewer) and charlie's palace
    (so an outsider is not simply blind), and an empty palace of alice's to copy and move rows into."""
    palaces = {"alice": personal(alice), "project": project, "charlie": personal(charlie)}
    for name, author in [("alice", alice), ("project", alice), ("charlie", charlie)]:
        _fill(palaces[name], author, name)
    palaces["solo"] = project_create(origin="https://example.test/alice/solo", owner=alice, actor=system)
    return palaces


def personal(user: Any) -> Palace:
    return Palace.objects.get(personal_owner=user)


def _ids(table: str, where: str = "TRUE", params: list[Any] | None = None) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT t.id FROM {table} t WHERE {where}", params or [])  # noqa: S608 - catalogue names
        return {int(row[0]) for row in cursor.fetchall()}


def _write(sql: str, params: list[Any]) -> int | str:
    """Run a write in a savepoint that is always rolled back: the rows changed, or the SQLSTATE it was refused with."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
            changed = cursor.rowcount
            transaction.set_rollback(True)
            return changed
    except DatabaseError as exc:
        return getattr(exc.__cause__, "sqlstate", None) or str(exc)


@pytest.fixture
def copy_of() -> Iterator[Copier]:
    """An INSERT of a copy of one row (every column but `id`; with `column` and `palace_id`, into that palace),
    prepared as the system: a temporary table is not under row-level security, so what the INSERT tries to write
    never depends on who runs it."""
    made: list[str] = []

    def prepare(table: str, row_id: int, column: str | None, palace_id: int | None) -> Callable[[], int | str]:
        name = f"copy_{len(made)}"
        with rls.acting_as_system("tests: a copy to insert"), connection.cursor() as cursor:
            cursor.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped"
                " AND attgenerated = '' AND attname <> 'id' ORDER BY attnum",
                [table],
            )
            columns = ", ".join(row[0] for row in cursor.fetchall())
            cursor.execute(f"CREATE TEMP TABLE {name} AS SELECT {columns} FROM {table} WHERE id = %s", [row_id])  # noqa: S608
            assert cursor.rowcount == 1
            if column is not None:
                cursor.execute(f"UPDATE {name} SET {column} = %s", [palace_id])  # noqa: S608
        made.append(name)
        return lambda: _write(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {name}", [])  # noqa: S608

    yield prepare
    with connection.cursor() as cursor:
        for name in made:
            cursor.execute(f"DROP TABLE IF EXISTS {name}")


def _persona(
    table: str, rows: set[int], insert: Callable[[], int | str], *, reads: bool, changes: bool, inserts: bool
) -> list[str]:
    """What the current context may do with `rows` of `table`, against what it should: read them all or none,
    update and delete them all or none (an append-only table refuses its readers with an error), and insert a
    copy, refused by the policies or not."""
    found = []
    visible = _ids(table) & rows
    if visible != (rows if reads else set()):
        found.append(f"sees {len(visible)} of {len(rows)} rows, should see {'all' if reads else 'none'}")
    for verb in ("UPDATE {t} SET id = id", "DELETE FROM {t}"):
        done = _write(verb.format(t=table) + " WHERE id = ANY(%s)", [list(rows)])
        if table in APPEND_ONLY and reads:
            ok, should = isinstance(done, str), "refused by the append-only trigger"
        else:
            ok, should = done == (len(rows) if changes else 0), f"{len(rows) if changes else 0} rows"
        if not ok:
            found.append(f"{verb.split()[0]}: {done}, should be {should}")
    inserted = insert()
    if (inserted == RLS_REFUSED) == inserts:
        found.append(f"INSERT of a copy: {inserted}, should be {'admitted' if inserts else 'refused by its policy'}")
    return found


def test_without_a_context_every_palace_scoped_table_looks_empty(world: dict[str, Palace]) -> None:
    tables = palace_scoped_tables()
    populated = {table: len(_ids(table)) for table in tables}  # the tests' system context: everything
    assert all(populated.values()), populated
    with rls.acting_as_nobody():
        assert {table: len(_ids(table)) for table in tables} == dict.fromkeys(tables, 0)
        assert Memory.objects.count() == 0  # the ORM too: a query that forgets its filter
    assert {table: len(_ids(table)) for table in tables} == populated  # the context found is back


def test_every_palace_scoped_table_hides_and_guards_a_personal_palace_from_everyone_else(
    world: dict[str, Palace], alice: Any, bob: Any, charlie: Any, copy_of: Copier
) -> None:
    tables = palace_scoped_tables()
    assert {"memory_memory", "memory_fact", "memory_handoffversion", "palace_oplog"} <= tables.keys()  # it finds them
    mine, solo, theirs = world["alice"].pk, world["solo"].pk, world["charlie"].pk
    problems: dict[str, list[str]] = {}
    for table, owner_of in sorted(tables.items()):
        found = problems.setdefault(table, [])
        owned_by_user = table in OWNED_BY_USER
        rows = _ids(table, f"{owner_of} = %s", [alice.pk if owned_by_user else mine])  # as the system: every row
        if not rows:
            found.append("no row of alice's in the world fixture: add one to `_fill`, so its policies are tested")
            continue
        column = None if owned_by_user or not owner_of.startswith("t.") else owner_of[2:]  # its palace's column
        with rls.acting_as(alice):  # the positive control: she reads, changes and copies her rows
            insert = copy_of(table, min(rows), column, solo)
            found += [f"alice {p}" for p in _persona(table, rows, insert, reads=True, changes=True, inserts=True)]
            if column is not None and table not in APPEND_ONLY:
                move = f"UPDATE {table} SET {column} = %s WHERE id = %s"  # noqa: S608
                if (moved := _write(move, [solo, min(rows)])) != 1:
                    found.append(f"alice cannot move her row into another palace she owns ({moved})")
                if (refused := _write(move, [theirs, min(rows)])) != RLS_REFUSED:
                    found.append(f"alice moved her row into charlie's palace ({refused})")
        for name in ("bob", "charlie", "nobody"):
            user = {"bob": bob, "charlie": charlie}.get(name)
            with rls.acting_as(user) if user is not None else rls.acting_as_nobody():
                insert = copy_of(table, min(rows), None, None)
                found += [
                    f"{name} {p}" for p in _persona(table, rows, insert, reads=False, changes=False, inserts=False)
                ]
        with rls.acting_as(charlie):  # charlie is not simply blind: his own rows are there
            if not _ids(table, f"{owner_of} = %s", [charlie.pk if owned_by_user else theirs]):
                found.append("charlie does not see his own rows")
    assert {table: found for table, found in problems.items() if found} == {}


def test_every_palace_scoped_table_lets_a_viewer_read_a_project_and_only_an_editor_change_it(
    world: dict[str, Palace], alice: Any, bob: Any, charlie: Any, copy_of: Copier, system: Actor
) -> None:
    """Bob is a viewer of the project: he reads its rows and changes none, and inserts only what a reader writes
    (records of his reads, op rows of what he did); made an editor, he changes them all. Charlie sees none of it.
    A row private to its author (another member's handoff) is the next test's."""
    tables = {t: o for t, o in palace_scoped_tables().items() if t not in OWNED_BY_USER}
    project = world["project"]
    problems: dict[str, list[str]] = {}
    for editor in (False, True):
        if editor:
            member_set(palace=project, user=bob, role=Membership.Role.EDITOR, actor=system)
        role = "editor" if editor else "viewer"
        for table, owner_of in sorted(tables.items()):
            found = problems.setdefault(table, [])
            rows = _ids(table, f"{owner_of} = %s", [project.pk])
            if not rows:
                found.append("no row of the project's in the world fixture: add one to `_fill`")
                continue
            if table not in PRIVATE_TO_AUTHOR:
                with rls.acting_as(bob):
                    insert = copy_of(table, min(rows), None, None)
                    inserts = editor or table in READER_INSERTS
                    found += [
                        f"bob as {role} {p}"
                        for p in _persona(table, rows, insert, reads=True, changes=editor, inserts=inserts)
                    ]
            with rls.acting_as(charlie):
                insert = copy_of(table, min(rows), None, None)
                found += [
                    f"charlie {p}" for p in _persona(table, rows, insert, reads=False, changes=False, inserts=False)
                ]
    assert {table: found for table, found in problems.items() if found} == {}


def test_a_handoff_is_private_to_its_person_even_from_members_of_its_palace(
    world: dict[str, Palace], alice: Any, bob: Any
) -> None:
    """The handoff selectors filter by person (memory/context/handoff.py); the database should too, so a query
    that forgets that filter shows a member nothing of another member's handoff."""
    project = world["project"].pk
    for table, author in PRIVATE_TO_AUTHOR.items():  # a handoff, a distillation job, a capture session and its turns
        mine = "t.palace_id = %s AND t.user_id = %s"
        if author == "session_id":  # a turn is hers through its session
            mine = (
                "t.session_id IN (SELECT s.id FROM capture_capturesession s WHERE s.palace_id = %s AND s.user_id = %s)"
            )
        alices = _ids(table, mine, [project, alice.pk])
        assert alices, table
        with rls.acting_as(alice):
            assert _ids(table) >= alices, table  # the positive control: hers
        with rls.acting_as(bob):
            assert _ids("memory_fact", "t.palace_id = %s", [project])  # he reads the project
            assert not _ids(table) & alices, table


def test_every_palace_scoped_table_is_under_forced_row_level_security_with_all_four_policies(db: Any) -> None:
    """The catalogue's own account, so a table added without `palace_policies(...)` in its migration is named here
    (the persona test above names it too, by what leaks)."""
    tables = palace_scoped_tables()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
                   array(SELECT DISTINCT p.polcmd::text FROM pg_policy p WHERE p.polrelid = c.oid ORDER BY 1)
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
            WHERE c.relname = ANY(%s)
            """,
            [list(tables)],
        )
        state = {name: (enabled, forced, commands) for name, enabled, forced, commands in cursor.fetchall()}
    assert state.keys() == tables.keys()
    # r = SELECT, a = INSERT, w = UPDATE, d = DELETE ("*" = one policy for all of them)
    assert {
        name: found
        for name, found in state.items()
        if not (found[0] and found[1] and (set(found[2]) >= {"r", "a", "w", "d"} or "*" in found[2]))
    } == {}
