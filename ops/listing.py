"""What `atrium mcp-config --registry` and `--plugin DIR` write: this server as an MCP registry entry (`server.json`)
and as a Claude Code plugin in a one-plugin marketplace, both from the server's URL (the same URL the snippets use,
ops/management/commands/mcp_config.py), so neither can drift from where the server is.

- **server.json** (the MCP registry's format, schema 2025-12-11): one streamable-http remote whose URL is a template,
  `<scheme>://{host}/mcp`, the host a variable defaulting to this server's, so the entry also describes another
  team's Atrium; auth: an optional `Authorization: Bearer {token}` header (a personal token), since a client that
  speaks MCP OAuth signs in on its own from the 401's discovery and needs none.
- **the plugin**: `.claude-plugin/marketplace.json` at DIR, the plugin in DIR/atrium with its
  `.claude-plugin/plugin.json`: the MCP server (http, this URL, no header: Claude Code signs in with OAuth) and the
  capture hook (deploy/hooks/claude-code/atrium-capture.sh, copied into the plugin) on Stop and SessionEnd. The hook
  posts to the REST capture endpoint, which takes personal tokens only: it reads ATRIUM_TOKEN from the environment
  Claude Code runs in, and does nothing without one.
"""

from __future__ import annotations

import json
import shutil
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

SERVER_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
MARKETPLACE_SCHEMA = "https://www.schemastore.org/claude-code-marketplace.json"
PLUGIN_SCHEMA = "https://www.schemastore.org/claude-code-plugin-manifest.json"
PLUGIN = "atrium"
HOOK_SOURCE = Path("deploy/hooks/claude-code/atrium-capture.sh")
HOOK_TIMEOUT_S = 30  # as the settings.json block of --with-hooks
DESCRIPTION = "Team memory for AI agents: save, search and recall what your team learned (self-hosted)."


def package_version() -> str:
    """The installed distribution's version, as serverInfo.version reports it (api/mcp/server.py)."""
    try:
        return version("atrium")
    except PackageNotFoundError:
        return "0+unknown"


def registry_name(url: str) -> str:
    """The registry's reverse-DNS name for the server at `url`: its host reversed, then `/atrium`
    (atrium.example.com -> com.example.atrium/atrium): a namespace the host's owner can prove."""
    host = (urlsplit(url).hostname or "localhost").rstrip(".")
    return ".".join(reversed(host.split("."))) + "/" + PLUGIN


def server_json(*, url: str, name: str | None = None) -> dict[str, Any]:
    """The registry entry for the MCP endpoint `url` (…/mcp)."""
    parts = urlsplit(url)
    return {
        "$schema": SERVER_SCHEMA,
        "name": name or registry_name(url),
        "title": "Atrium",
        "description": DESCRIPTION[:100],
        "version": package_version(),
        "websiteUrl": f"{parts.scheme}://{parts.netloc}/",
        "remotes": [
            {
                "type": "streamable-http",
                "url": f"{parts.scheme}://{{host}}{parts.path}",
                "variables": {
                    "host": {
                        "description": "Your Atrium server's host (and port)",
                        "isRequired": True,
                        "default": parts.netloc,
                    }
                },
                "headers": [
                    {
                        "name": "Authorization",
                        "description": "A personal token (Tokens page, or `atrium token create`). Not needed by a "
                        "client that signs in with MCP OAuth: the server's 401 tells it where.",
                        "isRequired": False,
                        "isSecret": True,
                        "value": "Bearer {token}",
                        "variables": {"token": {"description": "the personal token", "isSecret": True}},
                    }
                ],
            }
        ],
    }


def plugin_manifest(*, url: str) -> dict[str, Any]:
    """The plugin's .claude-plugin/plugin.json: the MCP server and the capture hook."""
    base = url.removesuffix("/mcp")
    command = f'ATRIUM_URL="{base}" sh "${{CLAUDE_PLUGIN_ROOT}}/hooks/{HOOK_SOURCE.name}"'
    run = [{"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}]}]
    return {
        "$schema": PLUGIN_SCHEMA,
        "name": PLUGIN,
        "version": package_version(),
        "description": f"{DESCRIPTION} Server: {base}",
        "mcpServers": {PLUGIN: {"type": "http", "url": url}},
        "hooks": {"Stop": run, "SessionEnd": run},
    }


def marketplace_manifest(*, url: str) -> dict[str, Any]:
    host = urlsplit(url).netloc
    return {
        "$schema": MARKETPLACE_SCHEMA,
        "name": PLUGIN,
        "owner": {"name": f"Atrium at {host}"},
        "plugins": [
            {
                "name": PLUGIN,
                "source": f"./{PLUGIN}",
                "description": DESCRIPTION,
                "version": package_version(),
            }
        ],
    }


def plugin_write(*, directory: Path, url: str) -> list[Path]:
    """Write the marketplace at `directory` (made if missing; the plugin's own files replaced, others kept)."""
    plugin_root = directory / PLUGIN
    files = {
        directory / ".claude-plugin" / "marketplace.json": marketplace_manifest(url=url),
        plugin_root / ".claude-plugin" / "plugin.json": plugin_manifest(url=url),
    }
    for path, document in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    hook = plugin_root / "hooks" / HOOK_SOURCE.name
    hook.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(settings.BASE_DIR) / HOOK_SOURCE, hook)
    hook.chmod(0o755)
    return [*files, hook]
