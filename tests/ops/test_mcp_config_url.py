"""`atrium mcp-config`'s URL and Check line (issue 26): the URL defaults to where a running `atrium up` serves
(ATRIUM_HOME/up.url while its up.pid process lives), else ATRIUM_PORT, and ATRIUM_PUBLIC_URL or --url win; the
output says which. The Check line, run by a shell, expands $ATRIUM_TOKEN (it was single-quoted: sent literally).
The real `atrium up` writing up.url is tested in tests/ops/test_up.py."""

from __future__ import annotations

import os
import re
import subprocess
from io import StringIO
from pathlib import Path
from typing import Any

from django.core.management import call_command


def _config(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("mcp_config", "--user", "alice", "--client", "generic", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen(["true"])  # noqa: S607
    proc.wait()
    return proc.pid


def test_the_url_defaults_to_the_running_atrium_up(alice: Any, settings: Any, tmp_path: Path) -> None:
    settings.ATRIUM_HOME, settings.ATRIUM_PUBLIC_URL, settings.ATRIUM_PORT = tmp_path, "", 8123
    (tmp_path / "up.url").write_text("http://127.0.0.1:8765\n")
    (tmp_path / "up.pid").write_text(str(os.getpid()))  # a live process holds the lock
    out, err = _config()
    assert "URL:    http://127.0.0.1:8765/mcp" in out and "8000" not in out
    assert "from the running `atrium up`" in err

    (tmp_path / "up.pid").write_text(str(_dead_pid()))  # a stale record is not believed
    out, err = _config()
    assert "URL:    http://127.0.0.1:8123/mcp" in out and "from ATRIUM_PORT" in err

    settings.ATRIUM_PUBLIC_URL = "https://atrium.example.com/"
    out, err = _config()
    assert "URL:    https://atrium.example.com/mcp" in out and "from ATRIUM_PUBLIC_URL" in err
    out, err = _config("--url", "http://10.0.0.5:9000")
    assert "URL:    http://10.0.0.5:9000/mcp" in out and "from --url" in err


def test_the_check_line_expands_the_token_in_a_shell(alice: Any, settings: Any, tmp_path: Path) -> None:
    settings.ATRIUM_HOME, settings.ATRIUM_PUBLIC_URL = tmp_path, ""
    out, _ = _config()
    check = re.search(r"^Check:\s+(.*)$", out, re.MULTILINE)
    assert check is not None, out
    # curl replaced by a function that prints each argument it gets on its own line
    script = 'curl() { for a in "$@"; do printf "%s\\n" "$a"; done; }; ' + check.group(1)
    ran = subprocess.run(  # noqa: S603
        ["sh", "-c", script],  # noqa: S607
        env={"PATH": os.environ["PATH"], "ATRIUM_TOKEN": "fake-token-123"},
        capture_output=True,
        text=True,
        check=True,
    )
    args = ran.stdout.splitlines()
    assert "Authorization: Bearer fake-token-123" in args, args
    assert args[-1] == "http://127.0.0.1:8000/api/v1/profile.txt"
