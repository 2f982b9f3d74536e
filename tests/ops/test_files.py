"""Files Atrium creates: the secret key is 0600 from its first byte, ATRIUM_HOME is private (0700; 0711 as root so
the embedded PostgreSQL's own system user can pass through to its data dir), and a runtime directory someone else
made first is never used."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ops.embedded import home_mode, runtime_dir

ROOT = Path(__file__).resolve().parents[2]


def import_settings(home: Path, *, prelude: str = "pass") -> str:
    """Import config.settings in a fresh process with ATRIUM_HOME=home and umask 022; print SECRET_KEY."""
    code = f"import os; os.umask(0o022); {prelude}; import config.settings as s; print(s.SECRET_KEY)"
    env = {k: v for k, v in os.environ.items() if k != "ATRIUM_SECRET_KEY"} | {"ATRIUM_HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_secret_key_file_is_never_readable_by_others(tmp_path: Path) -> None:
    # chmod made a no-op: a key written 0644 and narrowed afterwards (the old way) would stay 0644, as it is
    # between the write and the chmod, or for good when the process dies in between.
    home = tmp_path / "home"
    key = import_settings(home, prelude="import pathlib; pathlib.Path.chmod = lambda *a, **k: None")
    assert (home / "secret_key").stat().st_mode & 0o777 == 0o600
    assert home.stat().st_mode & 0o077 in (0, 0o011)
    assert len(key) > 40
    assert import_settings(home) == key  # the control: the same key on the next start


def test_atrium_home_is_created_private(tmp_path: Path) -> None:
    home = tmp_path / "fresh" / "home"
    import_settings(home)
    assert home.stat().st_mode & 0o777 == home_mode()
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    import_settings(loose)
    assert loose.stat().st_mode & 0o777 == home_mode()


@pytest.mark.django_db
def test_the_running_test_home_is_private_and_the_embedded_server_works_with_it() -> None:
    from django.db import connection

    home = Path(os.environ["ATRIUM_HOME"])
    with connection.cursor() as cursor:  # the server in home/pg answers (as its own user, when we are root)
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
    assert home.stat().st_mode & 0o777 == home_mode()
    assert home_mode() == (0o711 if os.geteuid() == 0 else 0o700)


def test_runtime_dir_of_another_user_is_not_reused(tmp_path: Path) -> None:
    uid = os.geteuid()
    fresh = runtime_dir(tmp_path)  # the control: a new one is ours, private, and reused next time
    assert fresh == tmp_path / f"runtime-{uid}" and fresh.stat().st_mode & 0o777 == 0o700
    assert runtime_dir(tmp_path) == fresh

    if uid != 0:
        pytest.skip("making a directory owned by another user needs root")
    os.chown(fresh, 4242, 4242)  # someone else made /tmp/runtime-<uid> first
    taken = tmp_path / f"runtime-{uid}-1"
    taken.symlink_to(tmp_path)  # and planted a symlink on the next name
    chosen = runtime_dir(tmp_path)
    assert chosen == tmp_path / f"runtime-{uid}-2"
    info = chosen.lstat()
    assert info.st_uid == uid and info.st_mode & 0o777 == 0o700
    assert runtime_dir(tmp_path) == chosen  # every process of ours agrees on it


def test_own_runtime_dir_writable_by_others_is_narrowed(tmp_path: Path) -> None:
    path = tmp_path / f"runtime-{os.geteuid()}"
    path.mkdir()
    path.chmod(0o777)
    assert runtime_dir(tmp_path) == path
    assert path.stat().st_mode & 0o022 == 0
