"""Issue 24 (low): as root, the embedded PostgreSQL runs with trust authentication under a system user it creates and
widens the parents of ATRIUM_HOME. `atrium up` (and every door that starts it) refuses that unless ATRIUM_ALLOW_ROOT
is set; with an external DATABASE_URL root is not refused. The check is ops/embedded.refuse_root, called by
postgres_url, which is where `atrium up` starts the server (config/cli.py → config/prepare.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from config import cli
from config.prepare import start_embedded_database
from ops import embedded
from ops.embedded import ALLOW_ROOT, EmbeddedError, refuse_root

ADVICE = ("as root", "unprivileged user", "DATABASE_URL", ALLOW_ROOT)


@pytest.mark.parametrize(
    ("uid", "allow", "refused"),
    [(0, None, True), (0, "0", True), (0, "1", False), (0, "true", False), (1000, None, False)],
)
def test_root_is_refused_unless_allowed(uid: int, allow: str | None, refused: bool, monkeypatch: Any) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: uid)
    if allow is None:
        monkeypatch.delenv(ALLOW_ROOT, raising=False)
    else:
        monkeypatch.setenv(ALLOW_ROOT, allow)
    if refused:
        with pytest.raises(EmbeddedError) as caught:
            refuse_root()
        assert all(words in str(caught.value) for words in ADVICE)
    else:
        refuse_root()  # an unprivileged user, or root with the override: nothing to refuse


def _tripwire(monkeypatch: Any) -> None:
    """What postgres_url does first after the check: should the check be gone, the test fails here instead of
    starting a real server (and `atrium up` on port 8000) from inside the test."""

    def reached(pgdata: Path) -> None:
        raise AssertionError(f"the embedded PostgreSQL was about to start in {pgdata}")

    monkeypatch.setattr(embedded, "_clear_stale_postmaster", reached)


def test_atrium_up_as_root_stops_before_the_embedded_server_is_touched(
    tmp_path: Path, monkeypatch: Any, settings: Any, capsys: Any
) -> None:
    """In process, the real entry point of `atrium up` (config/cli.main): it exits 2 with the message, and nothing
    was created under ATRIUM_HOME (no data dir, no up lock). The control: root with an external DATABASE_URL is not
    refused."""
    _tripwire(monkeypatch)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.delenv(ALLOW_ROOT, raising=False)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    settings.ATRIUM_HOME, settings.ATRIUM_EMBEDDED_POSTGRES = tmp_path, True
    monkeypatch.setattr(sys, "argv", ["atrium", "up"])
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    assert stopped.value.code == 2
    assert "atrium: refusing to start the embedded PostgreSQL as root" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []

    monkeypatch.setenv("DATABASE_URL", "postgresql://atrium@db.example.test/atrium")
    start_embedded_database()  # external database: returns without starting (or refusing) anything
    assert list(tmp_path.iterdir()) == []


def test_postgres_url_asks_refuse_root_first(tmp_path: Path, monkeypatch: Any) -> None:
    """Every door that starts the embedded server goes through postgres_url; it refuses before the data dir."""
    _tripwire(monkeypatch)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.delenv(ALLOW_ROOT, raising=False)
    with pytest.raises(EmbeddedError, match="as root"):
        embedded.postgres_url(tmp_path)
    assert not (tmp_path / "pg").exists()
