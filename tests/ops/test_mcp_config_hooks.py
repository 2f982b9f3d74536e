"""`atrium mcp-config --client claude-code --with-hooks`: the settings.json block that runs the capture hook."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from accounts.models import ApiToken


def _hooks_block(text: str) -> dict[str, Any]:
    tail = text.split("# Capture:", 1)[1]
    return json.loads(tail[tail.index("\n{") :])


def test_with_hooks_prints_the_stop_and_session_end_hooks(alice: Any) -> None:
    out = StringIO()
    call_command(
        "mcp_config", "--user", "alice", "--client", "claude-code", "--with-hooks", stdout=out, stderr=StringIO()
    )
    text = out.getvalue()
    assert "claude mcp add --transport http atrium" in text  # the MCP snippet is still there
    block = _hooks_block(text)
    assert set(block["hooks"]) == {"Stop", "SessionEnd"}
    for event in ("Stop", "SessionEnd"):
        hook = block["hooks"][event][0]["hooks"][0]
        assert hook["type"] == "command" and hook["command"] == "sh $HOME/.claude/hooks/atrium-capture.sh"
        assert 0 < hook["timeout"] <= 60
    assert block["env"] == {"ATRIUM_URL": "http://127.0.0.1:8000"}  # no token in the file: it comes from the shell
    source = text.split("&& cp ", 1)[1].split(" ", 1)[0]
    assert (Path(settings.BASE_DIR) / source).is_file()  # the copy line names the script this server ships
    assert not ApiToken.objects.exists()


def test_with_hooks_and_a_new_token_puts_a_working_token_in_the_env(alice: Any, bearer: Any) -> None:
    out = StringIO()
    args = ["--user", "alice", "--client", "claude-code", "--with-hooks", "--with-new-token", "--url", "https://a.test"]
    call_command("mcp_config", *args, stdout=out, stderr=StringIO())
    env = _hooks_block(out.getvalue())["env"]
    assert env["ATRIUM_URL"] == "https://a.test"
    assert ApiToken.objects.get(user=alice).scope == "write"
    assert Client().get("/api/v1/profile.txt", **bearer(env["ATRIUM_TOKEN"])).status_code == 200


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--client", "codex", "--with-hooks"], "--client claude-code"),
        (["--client", "claude-code", "--with-hooks", "--with-new-token", "--scope", "read"], "write token"),
    ],
)
def test_with_hooks_is_refused_where_it_cannot_work(alice: Any, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("mcp_config", "--user", "alice", *args, stdout=StringIO(), stderr=StringIO())
    assert not ApiToken.objects.exists()
