"""A newcomer's first command: every command the README lists, run first on an empty ATRIUM_HOME, ends in its own
answer (a result, or one line saying what is missing), never a traceback such as `relation "auth_user" does not
exist`. On the embedded default a command applies the pending migrations first and says so in one line; against an
external DATABASE_URL it stops with one line saying to run `atrium migrate`.

Each command is a real `atrium` process with its own empty home (its own embedded PostgreSQL, started by it); they
run three at a time to keep the wall time down.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection

pytestmark = pytest.mark.slow

TINY = Path(__file__).parent / "data" / "tiny.jsonl"
MIGRATES_FIRST = "pending migration(s) to the embedded database first"


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]
    returncode: int
    says: str  # in stdout or stderr
    migrates_first: bool = True
    uses_database: bool = True
    stdin: str = ""


# The README's commands as written (small sizes for the benches), on a home with no user, project or token yet.
README_COMMANDS = [
    Case(
        ("createuser", "alice", "--email", "alice@example.com", "--password-stdin"),
        0,
        "Created user alice",
        stdin="correct-horse-9\n",
    ),
    Case(
        (
            "project",
            "create",
            "git@github.com:team/app.git",
            "--owner",
            "alice",
            "--member",
            "bob:editor",
            "--member",
            "eve:viewer",
        ),
        1,
        "no user named",
    ),
    Case(("project", "add-member", "https://github.com/team/app", "carol:viewer"), 1, "no project palace for"),
    Case(
        ("token", "create", "--user", "alice", "--name", "laptop claude-code", "--scope", "write"),
        1,
        "no user named 'alice'",
    ),
    Case(("token", "list", "--user", "alice"), 1, "no user named 'alice'"),
    Case(("token", "revoke", "3"), 1, "token not found"),
    Case(("mcp-config", "--user", "alice", "--client", "claude-code"), 1, "no active user named 'alice'"),
    Case(("eval", "--dataset", str(TINY), "--k", "1,3", "--json"), 0, '"headline"'),
    Case(("bench", "search", "--memories", "20", "--queries", "2", "--saves", "1", "--json"), 0, '"memories": 20'),
    Case(("bench", "mcp", "--clients", "0"), 1, "--clients must be 1–500", migrates_first=False, uses_database=False),
    Case(("decay", "--dry-run"), 0, "decay: would archive 0 memories"),
    Case(("distill", "--suggest"), 0, ""),
    Case(("backfill-embeddings",), 0, ""),
    Case(("migrate",), 0, "Applying palace.0001_initial", migrates_first=False),
    Case(("makemigrations", "--check", "--dry-run"), 0, "No changes detected", migrates_first=False),
    Case(("check",), 0, "no issues", migrates_first=False, uses_database=False),
]


def clean_env(**extra: str) -> dict[str, str]:
    """The test session's environment without its database and Redis, so the command finds its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS_URL", "ATRIUM_EMBEDDED"))}
    return env | extra


def atrium(argv: tuple[str, ...], env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "config.cli", *argv], env=env, input=stdin, capture_output=True, text=True, timeout=600
    )


@pytest.fixture
def empty_homes() -> Iterator[Any]:
    made: list[Path] = []

    def make() -> Path:
        home = Path(tempfile.mkdtemp(prefix="atrium-first-"))
        home.chmod(0o755)  # the embedded server may run as its own system user
        made.append(home)
        return home

    yield make
    for home in made:
        shutil.rmtree(home, ignore_errors=True)


def _run_on_empty_home(case: Case, home: Path) -> tuple[Case, subprocess.CompletedProcess[str], Path]:
    return case, atrium(case.argv, clean_env(ATRIUM_HOME=str(home)), case.stdin), home


def test_every_readme_command_run_first_on_an_empty_home_answers_without_a_traceback(empty_homes: Any) -> None:
    with ThreadPoolExecutor(max_workers=3) as pool:
        runs = list(pool.map(lambda case: _run_on_empty_home(case, empty_homes()), README_COMMANDS))

    failures = []
    for case, done, home in runs:
        output = done.stdout + done.stderr
        problems = []
        if "Traceback" in output or "ProgrammingError" in output:
            problems.append("a traceback")
        if done.returncode != case.returncode:
            problems.append(f"exit code {done.returncode}, expected {case.returncode}")
        if case.says not in output:
            problems.append(f"no {case.says!r}")
        if done.stderr.count(MIGRATES_FIRST) != (1 if case.migrates_first else 0):
            problems.append("the migrate-first line " + ("missing" if case.migrates_first else "unexpected"))
        if (home / "pg").exists() != case.uses_database:
            problems.append("an embedded PostgreSQL " + ("missing" if case.uses_database else "started for nothing"))
        if problems:
            failures.append(f"atrium {' '.join(case.argv)}: {', '.join(problems)}\n{output[-1500:]}")
    assert not failures, "\n\n".join(failures)


def test_a_newcomers_commands_in_readme_order_migrate_once(empty_homes: Any) -> None:
    env = clean_env(ATRIUM_HOME=str(empty_homes()))
    made = atrium(("createuser", "alice", "--password-stdin"), env, "correct-horse-9\n")
    assert made.returncode == 0, made.stderr
    assert made.stderr.count(MIGRATES_FIRST) == 1

    token = atrium(("token", "create", "--user", "alice", "--name", "laptop"), env)
    project = atrium(("project", "create", "git@github.com:team/app.git", "--owner", "alice"), env)
    snippet = atrium(("mcp-config", "--user", "alice", "--client", "generic"), env)

    for done in (token, project, snippet):
        assert done.returncode == 0, done.stderr
        assert MIGRATES_FIRST not in done.stderr  # migrated once, by the first command
    assert token.stdout.strip().startswith("atr_")
    assert "Authorization: Bearer $ATRIUM_TOKEN" in snippet.stdout


@pytest.fixture
def fresh_external_database(db: Any) -> Iterator[str]:
    """An empty database on the test session's server, named by a DATABASE_URL as an operator would give one."""
    params = connection.get_connection_params()
    admin = {k: v for k, v in params.items() if k in {"host", "port", "user", "password"} and v}
    name = f"atrium_fresh_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    query = f"?host={admin['host']}" if str(admin.get("host", "")).startswith("/") else ""
    netloc = admin.get("user", "") + ("@" if admin.get("user") else "")
    if not query:
        netloc += f"{admin.get('host', 'localhost')}:{admin.get('port', 5432)}"
    yield f"postgresql://{netloc}/{name}{query}"
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def test_an_external_database_without_migrations_gets_one_line_to_run_migrate(
    fresh_external_database: str, empty_homes: Any
) -> None:
    env = clean_env(DATABASE_URL=fresh_external_database, ATRIUM_HOME=str(empty_homes()))

    refused = atrium(("token", "list", "--user", "alice"), env)
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()
    assert re.fullmatch(
        r"atrium: the database at DATABASE_URL has \d+ unapplied migration\(s\): run `atrium migrate` first", line
    )

    checked = atrium(("check",), env)  # works without migrations
    assert checked.returncode == 0, checked.stderr
    migrated = atrium(("migrate",), env)
    assert migrated.returncode == 0, migrated.stderr
    assert MIGRATES_FIRST not in migrated.stderr  # never migrated behind the operator's back

    answered = atrium(("token", "list", "--user", "alice"), env)  # control: the same command, now migrated
    assert answered.returncode == 1
    assert "no user named 'alice'" in answered.stderr
