"""`atrium mcp-config --project-from-git`: the connection's project from `git remote get-url origin`, written into
the client config (an X-Atrium-Project header, or ?project= on the URL), and that config, used by the official MCP
client, works in that project. Real git repositories in a temporary directory."""

from __future__ import annotations

import json
import subprocess
from io import StringIO
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.models import Memory
from palace.models import Palace
from tests.api.mcp.conftest import BASE, call_each, run, text_of
from tests.conftest import PROJECT_ORIGIN

PROJECT = "https://github.com/atrium-test/demo"


def _repo(path: Path, origin: str | None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    if origin is not None:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", origin], check=True)
    return path


def _config(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("mcp_config", "--user", "alice", "--url", BASE, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.django_db
def test_the_origin_goes_into_each_client_s_config(alice: Any, project: Palace, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "demo", PROJECT_ORIGIN)
    (repo / "src").mkdir()
    claude, _ = _config("--client", "claude-code", "--project-from-git", "--dir", str(repo / "src"))
    assert f'--header "X-Atrium-Project: {PROJECT}"' in claude
    entry = json.loads(claude.split("\n", 3)[3])["mcpServers"]["atrium"]
    assert entry["headers"]["X-Atrium-Project"] == PROJECT and entry["url"] == f"{BASE}/mcp"
    cursor, _ = _config("--client", "cursor", "--project-from-git", "--dir", str(repo))
    assert json.loads(cursor.split("\n", 1)[1])["mcpServers"]["atrium"]["headers"]["X-Atrium-Project"] == PROJECT
    codex, _ = _config("--client", "codex", "--project-from-git", "--dir", str(repo))
    assert f'url = "{BASE}/mcp?project=https%3A%2F%2Fgithub.com%2Fatrium-test%2Fdemo"' in codex
    generic, _ = _config("--client", "generic", "--project-from-git", "--dir", str(repo))
    assert f"URL:    {BASE}/mcp?project=https%3A%2F%2Fgithub.com%2Fatrium-test%2Fdemo" in generic
    # Control: without the flag, no project anywhere.
    plain, _ = _config("--client", "claude-code")
    assert "X-Atrium-Project" not in plain and "project=" not in plain


@pytest.mark.django_db
def test_a_credential_in_the_remote_url_is_not_copied(alice: Any, project: Palace, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "demo", "https://alice:ghp_s3cr3tT0ken@github.com/atrium-test/demo.git")
    out, err = _config("--client", "claude-code", "--project-from-git", "--dir", str(repo))
    assert "ghp_s3cr3tT0ken" not in out + err and "alice:" not in out
    assert f"X-Atrium-Project: {PROJECT}" in out


@pytest.mark.django_db
def test_outside_a_repository_or_without_an_origin_is_a_clear_error(alice: Any, tmp_path: Path) -> None:
    bare = tmp_path / "not-a-repo"
    bare.mkdir()
    with pytest.raises(CommandError, match="not inside a git repository"):
        _config("--client", "claude-code", "--project-from-git", "--dir", str(bare))
    no_origin = _repo(tmp_path / "local-only", None)
    with pytest.raises(CommandError, match="no remote named origin"):
        _config("--client", "claude-code", "--project-from-git", "--dir", str(no_origin))
    odd = _repo(tmp_path / "odd", "/srv/git/demo.git")
    with pytest.raises(CommandError, match="not a git origin"):
        _config("--client", "claude-code", "--project-from-git", "--dir", str(odd))
    with pytest.raises(CommandError, match="no such directory"):
        _config("--client", "claude-code", "--project-from-git", "--dir", str(tmp_path / "missing"))
    # Control: the same command in a repository with an origin works.
    ok, _ = _config("--client", "claude-code", "--project-from-git", "--dir", str(_repo(tmp_path / "ok", PROJECT)))
    assert "X-Atrium-Project" in ok


@pytest.mark.django_db
def test_a_user_who_is_not_a_member_is_told_so(alice: Any, charlie: Any, project: Palace, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "demo", PROJECT_ORIGIN)
    out, err = StringIO(), StringIO()
    args = ("--client", "cursor", "--project-from-git", "--dir", str(repo))
    call_command("mcp_config", "--user", "charlie", *args, stdout=out, stderr=err)
    assert "charlie is not a member of" in err.getvalue() and "X-Atrium-Project" in out.getvalue()
    _, alice_err = _config(*args)
    assert "not a member" not in alice_err  # control: alice owns the project


def test_the_written_config_connects_in_the_project(
    tokens: dict[str, str], alice: Any, project: Palace, tmp_path: Path
) -> None:
    repo = _repo(tmp_path / "demo", PROJECT_ORIGIN)
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"type": "stdio", "command": "x"}}}))
    out, _ = _config("--client", "claude-code", "--project-from-git", "--dir", str(repo), "--write")
    assert str(repo / ".mcp.json") in out
    written = json.loads((repo / ".mcp.json").read_text())
    assert written["mcpServers"]["other"] == {"type": "stdio", "command": "x"}  # kept
    entry = written["mcpServers"]["atrium"]
    assert entry["headers"]["Authorization"] == "Bearer ${ATRIUM_TOKEN}"  # no token in the repository

    # The headers and URL it wrote, as a client sends them (the token from the environment).
    headers = {k: v for k, v in entry["headers"].items() if k != "Authorization"}
    (by_header,) = run(
        call_each(
            tokens["alice"],
            [("memory_save", {"content": "Demo ships on Tuesdays.", "kind": "fact"})],
            url=entry["url"],
            headers=headers,
        )
    )
    codex, _ = _config("--client", "codex", "--project-from-git", "--dir", str(repo))
    codex_url = codex.split('url = "', 1)[1].split('"', 1)[0]
    assert urlsplit(codex_url).query
    (by_url,) = run(
        call_each(
            tokens["alice"], [("memory_save", {"content": "Demo's CI caches uv.", "kind": "fact"})], url=codex_url
        )
    )
    for result in (by_header, by_url):
        assert not result.is_error, text_of(result)
        assert result.structured_content["palaceUsed"]["chosenBy"] == "connection"
        assert Memory.objects.get(pk=result.structured_content["items"][0]["id"]).palace_id == project.pk


@pytest.mark.django_db
def test_write_refuses_a_new_token_and_clients_without_a_repository_file(alice: Any, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "demo", PROJECT_ORIGIN)
    with pytest.raises(CommandError, match="token into a file"):
        _config("--client", "claude-code", "--project-from-git", "--dir", str(repo), "--write", "--with-new-token")
    with pytest.raises(CommandError, match="no per-repository config file"):
        _config("--client", "codex", "--project-from-git", "--dir", str(repo), "--write")
    with pytest.raises(CommandError, match="use it with --project-from-git"):
        _config("--client", "cursor", "--write")
    assert not (repo / ".mcp.json").exists() and not (repo / ".cursor").exists()
    out, _ = _config("--client", "cursor", "--project-from-git", "--dir", str(repo), "--write")  # control
    assert json.loads((repo / ".cursor" / "mcp.json").read_text())["mcpServers"]["atrium"]["url"] == f"{BASE}/mcp"
