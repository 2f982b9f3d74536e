"""`atrium mcp-config --user NAME --client claude-code|cursor|codex|generic [--with-new-token] [--url URL]
[--with-hooks]`

Prints a ready-to-paste snippet that connects an agent to this server's MCP endpoint. The token travels in an
environment variable (ATRIUM_TOKEN) unless `--with-new-token` mints one, which is then printed once, inside the
snippet, and never again. `--with-hooks` (Claude Code) also prints the settings.json block that runs the capture
hook (deploy/hooks/claude-code/atrium-capture.sh) on Stop and SessionEnd.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.tokens import token_create
from palace.actors import Actor
from palace.errors import AtriumError

CLIENTS = ("claude-code", "cursor", "codex", "generic")
ENV_VAR = "ATRIUM_TOKEN"


def endpoint(url: str | None) -> str:
    base = (url or settings.ATRIUM_PUBLIC_URL or "http://127.0.0.1:8000").rstrip("/")
    return base if base.endswith("/mcp") else f"{base}/mcp"


def snippet(*, client: str, url: str, token: str | None) -> str:
    """The configuration for `client`; `token` None means "read it from $ATRIUM_TOKEN"."""
    if client == "claude-code":
        value = f"Bearer {token}" if token else f"Bearer ${{{ENV_VAR}}}"
        config = {"mcpServers": {"atrium": {"type": "http", "url": url, "headers": {"Authorization": value}}}}
        header = f"Bearer {token}" if token else f"Bearer ${ENV_VAR}"
        return (
            "# Claude Code: add it from the shell ...\n"
            f'claude mcp add --transport http atrium {url} --header "Authorization: {header}"\n'
            "# ... or put this in .mcp.json at the root of your project:\n" + json.dumps(config, indent=2)
        )
    if client == "cursor":
        value = f"Bearer {token}" if token else f"Bearer ${{env:{ENV_VAR}}}"
        config = {"mcpServers": {"atrium": {"url": url, "headers": {"Authorization": value}}}}
        return "# Cursor: ~/.cursor/mcp.json (all projects) or .cursor/mcp.json (this project)\n" + json.dumps(
            config, indent=2
        )
    if client == "codex":
        lines = ["# Codex: ~/.codex/config.toml", "[mcp_servers.atrium]", f'url = "{url}"']
        lines.append(f'bearer_token_env_var = "{ENV_VAR}"')
        if token:
            lines.insert(0, f"# and in the environment Codex runs in:\n#   export {ENV_VAR}={token}")
        return "\n".join(lines)
    header = f"Bearer {token}" if token else f"Bearer ${ENV_VAR}"
    return (
        "# Any MCP client that speaks Streamable HTTP (JSON responses; protocol 2026-07-28 or 2025-x):\n"
        f"URL:    {url}\n"
        f"Header: Authorization: {header}\n"
        f"Check:  curl -s -H 'Authorization: {header}' {url.removesuffix('/mcp')}/api/v1/profile.txt"
    )


HOOK_SOURCE = "deploy/hooks/claude-code/atrium-capture.sh"
HOOK_PATH = "$HOME/.claude/hooks/atrium-capture.sh"
HOOK_TIMEOUT_S = 30  # Claude Code stops waiting for the hook after this; the script's own requests give up sooner


def hooks_snippet(*, url: str, token: str | None) -> str:
    """The settings.json block that runs the capture hook at the end of each response and of each session."""
    run = [{"hooks": [{"type": "command", "command": f"sh {HOOK_PATH}", "timeout": HOOK_TIMEOUT_S}]}]
    env = {"ATRIUM_URL": url.removesuffix("/mcp")}
    if token:
        env[ENV_VAR] = token
    block = {"env": env, "hooks": {"Stop": run, "SessionEnd": run}}
    lines = [
        "# Capture: copy the hook onto the machine Claude Code runs on (it needs sh, curl, and python3 or jq):",
        f"#   mkdir -p ~/.claude/hooks && cp {HOOK_SOURCE} {HOOK_PATH.replace('$HOME', '~')}",
        "# then merge this into ~/.claude/settings.json (all projects) or .claude/settings.json (this project):",
    ]
    if not token:
        lines.append(f"# (the hook reads {ENV_VAR} from the environment Claude Code runs in)")
    return "\n".join(lines) + "\n" + json.dumps(block, indent=2)


class Command(BaseCommand):
    help = "Print an MCP client configuration snippet for a user (no real token unless --with-new-token)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True)
        parser.add_argument("--client", required=True, choices=CLIENTS)
        parser.add_argument("--url", default=None, help="the server's public URL (default: ATRIUM_PUBLIC_URL)")
        parser.add_argument("--with-new-token", action="store_true", help="create a token and put it in the snippet")
        parser.add_argument("--scope", choices=["read", "write"], default="write", help="scope of the new token")
        parser.add_argument(
            "--with-hooks", action="store_true", help="also print the capture hook's settings.json block (claude-code)"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        user = get_user_model().objects.filter(username=opts["user"]).first()
        if user is None or not user.is_active:
            raise CommandError(f"no active user named {opts['user']!r}")
        if opts["with_hooks"] and opts["client"] != "claude-code":
            raise CommandError("--with-hooks is for --client claude-code (Codex and other clients: see the README)")
        if opts["with_hooks"] and opts["scope"] == "read":
            raise CommandError("--with-hooks needs a write token (capture writes): leave --scope at write")
        url = endpoint(opts["url"])
        raw = None
        if opts["with_new_token"]:
            try:
                token, raw = token_create(
                    user=user,
                    label=f"mcp {opts['client']}",
                    scope=opts["scope"],
                    actor=Actor.for_system("atrium mcp-config"),
                )
            except AtriumError as exc:
                raise CommandError(exc.message) from exc
            self.stderr.write(
                f"Created token {token.pk} 'mcp {opts['client']}' ({token.scope}) for {user.get_username()}; "
                "it appears below once and is not shown again."
            )
        else:
            self.stderr.write(
                f"Set {ENV_VAR} first: export {ENV_VAR}=$(atrium token create --user {user.get_username()} "
                f"--name {opts['client']})"
            )
        self.stdout.write(snippet(client=opts["client"], url=url, token=raw))
        if opts["with_hooks"]:
            self.stdout.write(hooks_snippet(url=url, token=raw))
