"""`atrium mcp-config --registry` (the MCP registry's server.json) and `--plugin DIR` (a Claude Code plugin in a
one-plugin marketplace), validated against the published schemas vendored in tests/ops/data/schemas/ (README there
says where each comes from); the URL is the snippets' (tests/ops/test_mcp_config_url.py)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from importlib.metadata import version
from io import StringIO
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.models import ApiToken

SCHEMAS = Path(__file__).parent / "data" / "schemas"


def _validator(name: str) -> jsonschema.Draft7Validator:
    schema = json.loads((SCHEMAS / name).read_text())
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


def _run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("mcp_config", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.django_db
def test_registry_entry_is_valid_and_names_this_server(settings: Any, tmp_path: Path) -> None:
    settings.ATRIUM_HOME, settings.ATRIUM_PUBLIC_URL = tmp_path, "https://atrium.example.com/"
    out, err = _run("--registry")
    entry = json.loads(out)
    validator = _validator("server.schema.json")
    assert not list(validator.iter_errors(entry)), list(validator.iter_errors(entry))
    assert "from ATRIUM_PUBLIC_URL" in err
    assert entry["name"] == "com.example.atrium/atrium" and entry["version"] == version("atrium")
    remote = entry["remotes"][0]
    assert remote["type"] == "streamable-http" and remote["url"] == "https://{host}/mcp"
    host = remote["variables"]["host"]["default"]
    assert remote["url"].replace("{host}", host) == "https://atrium.example.com/mcp"
    auth = remote["headers"][0]
    assert (auth["name"], auth["isRequired"], auth["isSecret"]) == ("Authorization", False, True)  # OAuth needs none
    # the validator is live: the same entry with a name the registry refuses fails
    assert list(validator.iter_errors({**entry, "name": "no slash"}))
    assert not list(validator.iter_errors(json.loads(_run("--registry", "--registry-name", "io.github.team/mem")[0])))

    out, _ = _run("--registry", "--url", "http://10.0.0.5:9000")
    remote = json.loads(out)["remotes"][0]
    assert remote["url"] == "http://{host}/mcp" and remote["variables"]["host"]["default"] == "10.0.0.5:9000"
    assert not ApiToken.objects.exists()  # no token made, no user needed


def test_plugin_is_a_valid_marketplace_with_the_mcp_server_and_the_capture_hook(settings: Any, tmp_path: Path) -> None:
    settings.ATRIUM_HOME, settings.ATRIUM_PUBLIC_URL = tmp_path, "https://atrium.example.com"
    target = tmp_path / "market"
    out, _ = _run("--plugin", str(target))
    assert "claude plugin marketplace add" in out and "claude plugin install atrium@atrium" in out

    marketplace = json.loads((target / ".claude-plugin" / "marketplace.json").read_text())
    assert not list(_validator("claude-code-marketplace.json").iter_errors(marketplace))
    entry = marketplace["plugins"][0]
    plugin_root = (target / entry["source"]).resolve()
    manifest = json.loads((plugin_root / ".claude-plugin" / "plugin.json").read_text())
    validator = _validator("claude-code-plugin-manifest.json")
    assert not list(validator.iter_errors(manifest))
    assert list(validator.iter_errors({**manifest, "mcpServers": {"atrium": {"type": "http"}}}))  # no url: refused
    assert manifest["name"] == entry["name"] == "atrium" and manifest["version"] == version("atrium")
    assert manifest["mcpServers"] == {"atrium": {"type": "http", "url": "https://atrium.example.com/mcp"}}

    shipped = Path(settings.BASE_DIR) / "deploy/hooks/claude-code/atrium-capture.sh"
    hook = plugin_root / "hooks" / "atrium-capture.sh"
    assert hook.read_bytes() == shipped.read_bytes() and hook.stat().st_mode & stat.S_IXUSR
    assert set(manifest["hooks"]) == {"Stop", "SessionEnd"}
    command = manifest["hooks"]["Stop"][0]["hooks"][0]["command"]
    # What Claude Code runs, with its plugin root: the copied hook, pointed at this server (an `sh` first on the
    # PATH prints what it was given instead of running the hook).
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sh").write_text('#!/bin/sh\nprintf "%s %s\\n" "$ATRIUM_URL" "$1"\n')
    (fake / "sh").chmod(0o755)
    ran = subprocess.run(  # noqa: S603
        ["/bin/sh", "-c", command],
        env={"PATH": f"{fake}:{os.environ['PATH']}", "CLAUDE_PLUGIN_ROOT": str(plugin_root)},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert ran.stdout.split() == ["https://atrium.example.com", str(hook)]

    (target / "notes.txt").write_text("kept")  # written again: the plugin's files replaced, others kept
    _run("--plugin", str(target), "--url", "http://127.0.0.1:8123")
    manifest = json.loads((plugin_root / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["mcpServers"]["atrium"]["url"] == "http://127.0.0.1:8123/mcp"
    assert (target / "notes.txt").read_text() == "kept"


def test_a_connection_snippet_still_needs_user_and_client(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="--user and --client are required"):
        _run("--client", "generic")
    with pytest.raises(CommandError, match="not a directory"):
        (tmp_path / "file").write_text("x")
        _run("--plugin", str(tmp_path / "file"))
    assert settings.BASE_DIR  # the command ran in this project
