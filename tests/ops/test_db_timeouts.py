"""The database session timeouts (issue 24, item 5): the server's connections carry statement_timeout and
idle_in_transaction_session_timeout from the settings; a statement over the limit is cancelled; the worker and the
`atrium` commands drop them before they connect (config/dbtimeouts.py)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from config.dbtimeouts import lift_session_timeouts
from config.settings import database_from_url, session_timeouts

pytestmark = pytest.mark.django_db


def _connect(options: str | None) -> psycopg.Connection[Any]:
    """A new connection to the test database with these libpq `options` instead of the settings' own."""
    params = dict(connection.get_connection_params())
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    params.pop("options", None)
    if options:
        params["options"] = options
    return psycopg.connect(**params, autocommit=True)


def _show(conn: Any, name: str) -> str:
    with conn.cursor() as cursor:
        cursor.execute(f"SHOW {name}")
        return str(cursor.fetchone()[0])


def test_the_servers_connections_carry_both_timeouts_from_the_settings() -> None:
    assert settings.ATRIUM_DB_STATEMENT_TIMEOUT == 30 and settings.ATRIUM_DB_IDLE_IN_TRANSACTION_TIMEOUT == 60
    assert _show(connection, "statement_timeout") == "30s"
    assert _show(connection, "idle_in_transaction_session_timeout") == "1min"


def test_a_statement_over_the_timeout_is_cancelled() -> None:
    with _connect(session_timeouts(statement=0.2, idle_in_transaction=1)) as conn:
        assert _show(conn, "statement_timeout") == "200ms"
        conn.execute("SELECT pg_sleep(0.01)")  # positive control: under the limit it runs
        with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
            conn.execute("SELECT pg_sleep(5)")


def test_options_in_the_url_are_kept_beside_the_timeouts() -> None:
    entry = database_from_url(
        "postgresql://u@h/db?options=-c%20search_path%3Dx", conn_max_age=0, session_options="-c statement_timeout=5"
    )
    assert entry["OPTIONS"] == {"options": "-c search_path=x -c statement_timeout=5"}


def test_lifting_drops_the_timeouts_and_keeps_the_rest() -> None:
    databases: dict[str, Any] = copy.deepcopy(settings.DATABASES)
    own = settings.ATRIUM_DB_SESSION_OPTIONS
    assert own in databases["default"]["OPTIONS"]["options"]
    other: dict[str, Any] = {"OPTIONS": {"options": f"-c search_path=x {own}"}}
    lift_session_timeouts({"other": other}, own)
    assert other["OPTIONS"]["options"] == "-c search_path=x"
    lifted = {"OPTIONS": {"options": own}}
    lift_session_timeouts({"x": lifted}, own)
    assert "options" not in lifted["OPTIONS"]
    with _connect(lifted["OPTIONS"].get("options")) as conn:  # what a command's or the worker's connection gets
        assert _show(conn, "statement_timeout") == "0"
        assert _show(conn, "idle_in_transaction_session_timeout") == "0"


SHOW = (
    "from django.db import connection\n"
    "with connection.cursor() as c:\n"
    "    c.execute('SHOW statement_timeout'); a = c.fetchone()[0]\n"
    "    c.execute('SHOW idle_in_transaction_session_timeout'); b = c.fetchone()[0]\n"
    "print('TIMEOUTS', a, b)\n"
)


def _run(argv: list[str]) -> str:
    db = connection.settings_dict
    host = db["HOST"] or "localhost"
    url = f"postgresql://{quote(db['USER'])}:{quote(db['PASSWORD'])}@/{db['NAME']}?host={quote(host)}&port={db['PORT']}"
    env = {**os.environ, "DATABASE_URL": url, "ATRIUM_EMBEDDED_POSTGRES": ""}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    line = next((x for x in done.stdout.splitlines() if x.startswith("TIMEOUTS")), None)
    assert line, done.stderr[-2000:]
    return line


@pytest.mark.django_db(transaction=True)
def test_the_worker_and_the_commands_connect_without_them_and_a_server_process_with_them() -> None:
    # Positive control: a process that loads the settings as the web server does has both timeouts.
    server = "import config.asgi\n" + SHOW
    assert _run([sys.executable, "-c", server]) == "TIMEOUTS 30s 1min"
    command = [sys.executable, "-m", "config.cli", "shell", "-c", SHOW]
    assert _run(command) == "TIMEOUTS 0 0"
    worker = (
        "import config.celery\nfrom celery.signals import celeryd_init\n"
        "celeryd_init.send(sender='test', instance=None, conf=None, options={})\n" + SHOW
    )
    assert _run([sys.executable, "-c", worker]) == "TIMEOUTS 0 0"
