"""`atrium up` end to end: embedded PostgreSQL and Redis, web and worker children, clean stop, data kept."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="atrium-up-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def up_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS_URL", "ATRIUM_EMBEDDED"))}
    env.update(ATRIUM_HOME=str(home), ATRIUM_ADMIN_PASSWORD="first-admin-pw", PYTHONUNBUFFERED="1")
    return env


def atrium(*args: str) -> list[str]:
    return [sys.executable, "-m", "config.cli", *args]


def start(home: Path, port: int) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen(
        atrium("up", "--port", str(port)), env=up_env(home), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    deadline = time.monotonic() + 120
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        lines.append(line)
        if "Press Ctrl-C to stop." in line:
            return proc, lines
    proc.kill()
    raise AssertionError("atrium up did not come up:\n" + "".join(lines))


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode()


def stop(proc: subprocess.Popen[str]) -> set[int]:
    """SIGTERM `atrium up`; return the pids of everything it had started."""
    family = {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    return family


def test_up_serves_stops_cleanly_and_keeps_its_data(home: Path) -> None:
    port = free_port()
    proc, lines = start(home, port)
    try:
        output = "".join(lines)
        assert "Created the first admin" in output
        assert f"http://127.0.0.1:{port}/mcp" in output
        assert get(f"http://127.0.0.1:{port}/healthz") == (200, '{"alive": true}')
        status, page = get(f"http://127.0.0.1:{port}/login/")
        assert status == 200
        assert "csrfmiddlewaretoken" in page
        postmaster = int((home / "pg" / "postmaster.pid").read_text().split()[0])
        assert psutil.pid_exists(postmaster)
        # another command joins the same embedded database while `up` runs
        made = subprocess.run(
            atrium("createuser", "zed"), env=up_env(home), capture_output=True, text=True, timeout=120
        )
        assert made.returncode == 0, made.stderr
        # mcp-config defaults to the port this `atrium up` serves, and says where the URL came from (issue 26)
        assert (home / "up.url").read_text().strip() == f"http://127.0.0.1:{port}"
        config = subprocess.run(
            atrium("mcp-config", "--user", "zed", "--client", "generic"),
            env=up_env(home),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert f"URL:    http://127.0.0.1:{port}/mcp" in config.stdout, config.stdout + config.stderr
        assert "from the running `atrium up`" in config.stderr
    finally:
        family = stop(proc)
    assert proc.returncode == 0
    assert not (home / "up.url").exists()  # a stopped `atrium up` serves nowhere
    # Everything it started ends with it (PostgreSQL may take a moment to shut down): poll up to a deadline.
    deadline = time.monotonic() + 60
    while survivors := _running(family | {postmaster}):
        assert time.monotonic() < deadline, f"still running after `atrium up` stopped: {survivors}"
        time.sleep(0.2)
    assert not (home / "redis.sock").exists() or not _answers(home / "redis.sock")

    # second start on the same home: data intact, no new admin
    proc, lines = start(home, port)
    try:
        assert "Created the first admin" not in "".join(lines)
        listed = subprocess.run(
            atrium(
                "shell",
                "-c",
                "from django.contrib.auth.models import User;"
                "print(sorted(User.objects.values_list('username', flat=True)))",
            ),
            env=up_env(home),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "['admin', 'zed']" in listed.stdout, listed.stderr
    finally:
        stop(proc)
    assert proc.returncode == 0


def _running(pids: set[int]) -> list[int]:
    running = []
    for pid in sorted(pids):
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                running.append(pid)
        except psutil.NoSuchProcess:
            pass
    return running


def _answers(sock: Path) -> bool:
    from ops.embedded import redis_running

    return redis_running(sock)


def test_port_in_use_is_a_clear_message_not_a_traceback(home: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            atrium("up", "--port", str(port)), env=up_env(home), capture_output=True, text=True, timeout=120
        )
    assert result.returncode != 0
    assert "already in use" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_a_stale_up_lock_is_taken_over_with_a_note(home: Path) -> None:
    (home / "up.pid").write_text("999999")  # a pid that is not running
    port = free_port()
    proc, lines = start(home, port)
    try:
        assert "stale lock" in "".join(lines)
    finally:
        stop(proc)
