"""Backup and restore of the whole server (ops/backup.py): `atrium backup` of the running database, `atrium restore`
into a new ATRIUM_HOME in another process (its own embedded PostgreSQL), then the same counts, op log and search
result there; a non-empty home is refused (after the positive control, the first restore, succeeded). A tampered or
foreign file is refused before the restore touches its target (fast tier: no second server is started)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from memory.search import SearchRequest, memory_search
from ops.backup import DUMP, MANIFEST, table_counts
from palace import rls
from palace.models import OpLog
from tests.ops.portability.world import SECRET_KEY, build_world

# Run in the restored server: counts, the op log and alice's search, as JSON on the last line.
FORCED = "SELECT relname FROM pg_class WHERE relrowsecurity AND relforcerowsecurity"
PROBE = f"""
import json
from django.db import connection
from django.contrib.auth import get_user_model
from memory.search.results import SearchRequest
from memory.search.search import memory_search
from ops.backup import table_counts
from palace import rls
from palace.models import OpLog
with rls.acting_as_system("probe"):
    with connection.cursor() as cursor:
        counts = table_counts(cursor)
        cursor.execute("{FORCED}")
        forced = sorted(row[0] for row in cursor.fetchall())
    oplog = [list(r) for r in OpLog.objects.order_by("pk").values_list("pk", "op", "target_id", "created_at")]
    alice = get_user_model().objects.get(username="alice")
with rls.acting_as(alice):
    request = SearchRequest(query="deploy Thursdays")
    hits = [h.memory.pk for h in memory_search(user=alice, request=request, reinforce=False,
                                               register_batch=False).hits]
print(json.dumps({{"counts": counts, "oplog": oplog, "hits": hits, "forced": forced}}, default=str))
"""


def _atrium(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "ATRIUM_EMBEDDED_POSTGRES"}}
    env.update(ATRIUM_HOME=str(home), ATRIUM_EMBEDDER="off", ATRIUM_SECRET_KEY="")
    return subprocess.run(
        [sys.executable, "-m", "config.cli", *args], env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_backup_restores_into_a_new_home_with_the_same_counts_op_log_and_search(
    transactional_db: Any, alice: Any, tmp_path: Path, embedder_down: None
) -> None:
    build_world(alice, alice.personal_palace)
    with rls.acting_as(alice):
        hits = [
            h.memory.pk
            for h in memory_search(
                user=alice, request=SearchRequest(query="deploy Thursdays"), reinforce=False, register_batch=False
            ).hits
        ]
    assert hits  # the search finds something to compare
    oplog = [
        [r[0], r[1], r[2], str(r[3])]
        for r in OpLog.objects.order_by("pk").values_list("pk", "op", "target_id", "created_at")
    ]
    with connection.cursor() as cursor:
        counts = table_counts(cursor)
        cursor.execute(FORCED)
        forced = sorted(row[0] for row in cursor.fetchall())
    backup = tmp_path / "atrium.backup"
    out = io.StringIO()
    call_command("backup", str(backup), stdout=out)
    assert "secret key" in out.getvalue()
    with tarfile.open(backup) as archive:
        manifest = json.loads(archive.extractfile(MANIFEST).read())  # type: ignore[union-attr]
    assert manifest["counts"] == counts and manifest["secret_key"]["present"] is True
    assert "value" not in manifest["secret_key"] and SECRET_KEY not in json.dumps(manifest)

    home = tmp_path / "home"
    restored = _atrium(home, "restore", str(backup))
    assert restored.returncode == 0, restored.stderr[-3000:]
    assert "every count as in the backup" in restored.stdout and "secret key" in restored.stdout
    probe = _atrium(home, "shell", "-c", PROBE)
    assert probe.returncode == 0, probe.stderr[-3000:]
    after = json.loads(probe.stdout.strip().splitlines()[-1])
    assert after["counts"] == counts
    assert after["oplog"] == oplog and len(oplog) == 5
    assert after["hits"] == hits
    assert after["forced"] == forced and "memory_memory" in forced  # the policies came along, still forced

    again = _atrium(home, "restore", str(backup))
    assert again.returncode != 0 and "not empty" in again.stderr


def _rewritten(genuine: Path, out: Path, change: Callable[[dict[str, bytes]], None]) -> Path:
    """A copy of the backup `genuine` with its members changed by `change` (name → bytes; delete one to drop it)."""
    with tarfile.open(genuine) as archive:
        members = {m.name: archive.extractfile(m).read() for m in archive.getmembers()}  # type: ignore[union-attr]
    change(members)
    with tarfile.open(out, "w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out


def _manifest(**edits: Any) -> Callable[[dict[str, bytes]], None]:
    def change(members: dict[str, bytes]) -> None:
        members[MANIFEST] = json.dumps({**json.loads(members[MANIFEST]), **edits}).encode()

    return change


def _flip_a_byte(members: dict[str, bytes]) -> None:
    dump = bytearray(members[DUMP])
    dump[len(dump) // 2] ^= 0x01
    members[DUMP] = bytes(dump)


TAMPERED: dict[str, tuple[Callable[[dict[str, bytes]], None], str]] = {
    "checksum edited": (_manifest(dump_sha256="0" * 64), "damaged: the dump does not match its checksum"),
    "dump edited": (_flip_a_byte, "damaged: the dump does not match its checksum"),
    "checksum removed": (_manifest(dump_sha256=None), "damaged: the dump does not match its checksum"),
    "format edited": (_manifest(format="other-backup"), "is not an Atrium backup of version 1"),
    "version edited": (_manifest(version=2), "is not an Atrium backup of version 1"),
    "manifest removed": (lambda m: m.__delitem__(MANIFEST), "is not an Atrium backup .no manifest.json"),
    "manifest not JSON": (lambda m: m.update({MANIFEST: b"{not json"}), "manifest is not a JSON object"),
    "manifest a list": (lambda m: m.update({MANIFEST: b"[1, 2]"}), "manifest is not a JSON object"),
}


def test_a_tampered_backup_is_refused_before_any_database_is_touched(tmp_path: Path, alice: Any) -> None:
    """Each tampering of a real backup is refused with what is wrong, before the restore touches its target: a new
    home stays empty (no PostgreSQL started there, so the retry with the right file is not refused as 'not empty'),
    and a database is not even looked at. The positive control: the genuine file passes the checks, and the restore
    goes on to its target (this test's database, refused because it is not empty)."""
    import psycopg

    from ops.backup import BackupError, backup_create, backup_restore, current_database_params

    genuine = tmp_path / "atrium.backup"
    backup_create(path=genuine)
    home = tmp_path / "home"
    here = psycopg.conninfo.make_conninfo(**current_database_params())
    with pytest.raises(BackupError, match="database at DATABASE_URL is not empty"):
        backup_restore(path=genuine, home=home, database_url=here)
    bogus = tmp_path / "bogus.tar"
    bogus.write_bytes(b"not a tar")
    cases = {
        name: (_rewritten(genuine, tmp_path / f"{i}.backup", c), m) for i, (name, (c, m)) in enumerate(TAMPERED.items())
    }
    cases["not a tar"] = (bogus, "cannot read")
    for name, (path, message) in cases.items():
        for target in ({"database_url": here}, {"database_url": ""}):
            with pytest.raises(BackupError, match=message):
                backup_restore(path=path, home=home, **target)
        assert not home.exists(), name


def test_scheduled_backup_is_off_by_default_then_keeps_the_newest(settings: Any, tmp_path: Path, alice: Any) -> None:
    # Transactional tests flush the rows data migrations wrote: run the migration's function (twice: no duplicate).
    import importlib
    from datetime import UTC, datetime, timedelta

    from django.apps import apps as django_apps
    from django.db.migrations.recorder import MigrationRecorder
    from django_celery_beat.models import PeriodicTask

    from ops.backup import backup_scheduled
    from ops.tasks import BACKUP_TASK, backup_task

    migration = importlib.import_module("ops.migrations.0001_backup")
    assert MigrationRecorder(connection).migration_qs.filter(app="ops", name="0001_backup").exists()
    PeriodicTask.objects.filter(name="atrium: backup").delete()
    migration.install(django_apps, None)
    migration.install(django_apps, None)
    (row,) = PeriodicTask.objects.filter(name="atrium: backup")
    assert row.task == BACKUP_TASK and (row.crontab.hour, row.crontab.minute) == ("2", "30")
    folder = tmp_path / "backups"
    settings.ATRIUM_BACKUP_DIR = ""
    assert backup_task()["state"] == "off" and not folder.exists()
    settings.ATRIUM_BACKUP_DIR, settings.ATRIUM_BACKUP_KEEP = str(folder), 2
    folder.mkdir()
    (folder / "notes.txt").write_text("not ours")
    t0 = datetime(2026, 12, 1, 2, 30, tzinfo=UTC)
    results = [backup_scheduled(now=t0 + timedelta(days=n)) for n in range(3)]
    assert [r["state"] for r in results] == ["done"] * 3 and results[2]["removed"] == ["atrium-20261201T023000Z.backup"]
    assert sorted(p.name for p in folder.iterdir()) == [
        "atrium-20261202T023000Z.backup",
        "atrium-20261203T023000Z.backup",
        "notes.txt",
    ]
    with tarfile.open(folder / "atrium-20261203T023000Z.backup") as archive:
        assert set(archive.getnames()) == {"manifest.json", "database.dump"}
