"""deploy/.env.example documents every variable the code reads."""

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
        r'(?:env(?:_bool|_int|_float|_list)?\(|os\.environ(?:\.get)?[\[(]|environ\.get\()"([A-Z][A-Z0-9_]+)"'
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


def test_the_embedded_server_runs_with_atriums_shared_buffers(settings: Any) -> None:
    """Fresh data dir (settings applied by a restart) and existing one (applied at start), each in its own process."""
    import subprocess
    import sys

    home = settings.ATRIUM_HOME / "tuning"
    home.mkdir()
    probe = (
        "import sys, psycopg; from pathlib import Path; from ops.embedded import postgres_url; "
        "uri = postgres_url(Path(sys.argv[1]), delete_on_exit=sys.argv[2] == 'delete'); "
        "print(psycopg.connect(uri).execute('SHOW shared_buffers').fetchone()[0])"
    )

    def shared_buffers(value: str, mode: str) -> str:
        env = {**os.environ, "ATRIUM_PG_SHARED_BUFFERS": value}
        done = subprocess.run(
            [sys.executable, "-c", probe, str(home), mode], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip().splitlines()[-1]

    assert shared_buffers("200", "stop") == "200MB"  # a fresh data dir
    assert (home / "pg" / "atrium.conf").read_text().count("shared_buffers = '200MB'") == 1
    assert shared_buffers("300", "delete") == "300MB"  # the same data dir, started again with another value
    assert not home.joinpath("pg").exists()


@pytest.mark.parametrize("value", ["lots", "8"])
def test_a_bad_shared_buffers_setting_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    from ops.embedded import EmbeddedError, shared_buffers_mb

    monkeypatch.setenv("ATRIUM_PG_SHARED_BUFFERS", value)
    with pytest.raises(EmbeddedError, match="ATRIUM_PG_SHARED_BUFFERS"):
        shared_buffers_mb()
    monkeypatch.setenv("ATRIUM_PG_SHARED_BUFFERS", "64")
    assert shared_buffers_mb() == 64  # control: a whole number of MB is taken as it is
