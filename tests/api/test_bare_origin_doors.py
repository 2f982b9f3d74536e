"""The README's spelling of a project, the bare key `github.com/org/repo` (issue 26, item 1), at the door where a
newcomer hit it: the hook URL `/api/v1/bootstrap.txt?project=github.com/org/repo`. A member gets the project; a
non-member gets exactly the answer for a project that does not exist. (The MCP door:
tests/api/mcp/test_bare_origin_tool.py; the normaliser's own cases: tests/palace/test_origins.py.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.test import Client

from palace.models import Palace

BARE = "github.com/atrium-test/demo"  # the project fixture's origin (git@github.com:atrium-test/demo.git), bare
MISSING = "github.com/atrium-test/nothing"


def test_bootstrap_txt_takes_the_bare_origin(
    alice: Any, charlie: Any, project: Palace, token_for: Callable[..., str], bearer: Callable[[str], dict[str, str]]
) -> None:
    url = "/api/v1/bootstrap.txt"
    member = Client().get(url, {"project": BARE}, **bearer(token_for(alice)))
    assert member.status_code == 200, member.content  # positive control: the project's bootstrap
    assert f"Session bootstrap ({project.origin_key})" in member.content.decode()
    outsider = Client().get(url, {"project": BARE}, **bearer(token_for(charlie)))
    missing = Client().get(url, {"project": MISSING}, **bearer(token_for(charlie)))
    assert outsider.status_code == missing.status_code == 404
    assert "Session bootstrap" not in outsider.content.decode()
    assert outsider.content.decode().replace(BARE, MISSING) == missing.content.decode()
