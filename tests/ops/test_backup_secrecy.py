"""A backup file is private from its first byte (not made with the umask and chmod'ed afterwards), and a restore
never puts the target database's password on pg_restore's command line (issue 24, Low)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ops import backup as backup_module
from ops.backup import backup_create, backup_restore

PASSWORD = "s3cret-Restore-pw"


def test_the_backup_is_created_owner_only_even_without_a_chmod(
    tmp_path: Path, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "chmod", lambda *a, **k: None)  # a chmod afterwards would hide a file made with the umask
    previous = os.umask(0o022)
    try:
        leftover = tmp_path / "atrium.backup.partial"
        leftover.write_bytes(b"from an interrupted run")
        leftover_mode = stat.S_IMODE(leftover.stat().st_mode)
        path = tmp_path / "atrium.backup"
        backup_create(path=path)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not leftover.exists()
    # positive control: the umask does make other files readable by others, so the check above can fail
    assert leftover_mode & 0o044


class Stop(Exception):
    """Raised in place of pg_restore's run against the database: the command line is what is checked."""


def test_pg_restore_gets_the_password_from_the_environment_not_argv(
    tmp_path: Path, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    genuine = tmp_path / "atrium.backup"
    backup_create(path=genuine)
    target = f"postgresql://restorer:{PASSWORD}@127.0.0.1:5999/fresh"
    monkeypatch.setattr(backup_module, "_restore_target", lambda **_: target)
    calls: list[tuple[list[str], dict[str, str]]] = []
    real_run = subprocess.run

    def run(args: list[str], **kwargs: Any) -> Any:
        calls.append((list(args), dict(kwargs["env"])))
        if any(a.startswith("--dbname=") for a in args):
            raise Stop
        return real_run(args, **kwargs)  # `pg_restore --list` reads only the file

    monkeypatch.setattr(backup_module.subprocess, "run", run)
    with pytest.raises(Stop):
        backup_restore(path=genuine, home=tmp_path / "home", database_url=target)
    argv, env = calls[-1]
    assert all(PASSWORD not in arg for args, _ in calls for arg in args)
    # positive control: the same restore does reach the target, with the password handed over by libpq's env
    dbname = next(a for a in argv if a.startswith("--dbname="))
    assert "restorer" in dbname and "5999" in dbname and "fresh" in dbname
    assert env["PGPASSWORD"] == PASSWORD
