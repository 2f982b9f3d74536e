"""deploy/.env.example documents every variable the code reads."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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
    for folder in ("config", "palace", "memory", "review", "api", "panel"):
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

    from config.embedded import _prune_dead_handles

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
