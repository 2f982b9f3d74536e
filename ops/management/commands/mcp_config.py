"""`atrium mcp-config --user NAME --client claude-code|cursor|codex|generic [--with-new-token] [--url URL]
[--project-from-git [--dir DIR] | --project ORIGIN] [--write] [--with-hooks]`

Prints a ready-to-paste snippet that connects an agent to this server's MCP endpoint. The token travels in an
environment variable (ATRIUM_TOKEN) unless `--with-new-token` mints one, which is then printed once, inside the
snippet, and never again.

`--project-from-git` names the connection's project (api/mcp/connection.py) from `git remote get-url origin` in the
current directory (or `--dir`), so an agent working in that repository need not pass `project` on every call: an
`X-Atrium-Project` header where the client sends headers (Claude Code, Cursor), `?project=` on the URL elsewhere
(Codex, any client). The origin is written normalised (`https://host/owner/repo`): a remote URL may carry a user
name or a credential, which must not be copied into a file. `--write` writes the project's config file into the
repository (`.mcp.json` for Claude Code, `.cursor/mcp.json` for Cursor), keeping its other servers; it refuses a
new token, which would put a credential into the repository.

`--with-hooks` (Claude Code) also prints the settings.json block that runs the capture hook
(deploy/hooks/claude-code/atrium-capture.sh) on Stop and SessionEnd.

`atrium mcp-config --registry [--url URL] [--registry-name NAME]` prints this server's MCP registry entry
(server.json); `atrium mcp-config --plugin DIR [--url URL]` writes a Claude Code plugin marketplace into DIR (the MCP
server, signed in with OAuth, and the capture hook). Neither needs --user or --client: no token is made
(ops/listing.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.tokens import token_create
from ops.listing import plugin_write, server_json
from ops.management.commands.up import serving_url
from palace.actors import Actor
from palace.errors import AtriumError, NotFound
from palace.origins import InvalidOrigin, normalize_origin
from palace.selectors import palace_get

CLIENTS = ("claude-code", "cursor", "codex", "generic")
ENV_VAR = "ATRIUM_TOKEN"
PROJECT_HEADER = "X-Atrium-Project"
# Where each client reads a project's own MCP configuration (relative to the repository's root).
PROJECT_FILES = {"claude-code": Path(".mcp.json"), "cursor": Path(".cursor") / "mcp.json"}
GIT_TIMEOUT_SECONDS = 10


def endpoint(url: str | None) -> tuple[str, str]:
    """The MCP URL and where it came from: --url, else ATRIUM_PUBLIC_URL, else the URL a running `atrium up` for
    this ATRIUM_HOME recorded (its real port), else 127.0.0.1 on ATRIUM_PORT (what `atrium up` would serve)."""
    running = serving_url(settings.ATRIUM_HOME)
    if url:
        base, source = url, "--url"
    elif settings.ATRIUM_PUBLIC_URL:
        base, source = settings.ATRIUM_PUBLIC_URL, "ATRIUM_PUBLIC_URL"
    elif running:
        base, source = running, f"the running `atrium up` ({settings.ATRIUM_HOME / 'up.url'})"
    else:
        base, source = f"http://127.0.0.1:{settings.ATRIUM_PORT}", "ATRIUM_PORT (no `atrium up` running here)"
    base = base.rstrip("/")
    return (base if base.endswith("/mcp") else f"{base}/mcp"), source


def with_project_query(url: str, project: str | None) -> str:
    return f"{url}?project={quote(project, safe='')}" if project else url


def server_entry(*, client: str, url: str, token: str | None, project: str | None) -> dict[str, Any]:
    """The `atrium` entry of a JSON config (Claude Code's .mcp.json, Cursor's mcp.json)."""
    env = f"${{{ENV_VAR}}}" if client == "claude-code" else f"${{env:{ENV_VAR}}}"
    headers = {"Authorization": f"Bearer {token}" if token else f"Bearer {env}"}
    if project:
        headers[PROJECT_HEADER] = project
    entry: dict[str, Any] = {"type": "http"} if client == "claude-code" else {}
    return {**entry, "url": url, "headers": headers}


def snippet(*, client: str, url: str, token: str | None, project: str | None = None) -> str:
    """The configuration for `client`; `token` None means "read it from $ATRIUM_TOKEN"; `project` (an origin) is
    the connection's project, in a header or on the URL."""
    if client == "claude-code":
        config = {"mcpServers": {"atrium": server_entry(client=client, url=url, token=token, project=project)}}
        header = f"Bearer {token}" if token else f"Bearer ${ENV_VAR}"
        extra = f' --header "{PROJECT_HEADER}: {project}"' if project else ""
        return (
            "# Claude Code: add it from the shell ...\n"
            f'claude mcp add --transport http atrium {url} --header "Authorization: {header}"{extra}\n'
            "# ... or put this in .mcp.json at the root of your project:\n" + json.dumps(config, indent=2)
        )
    if client == "cursor":
        config = {"mcpServers": {"atrium": server_entry(client=client, url=url, token=token, project=project)}}
        return "# Cursor: ~/.cursor/mcp.json (all projects) or .cursor/mcp.json (this project)\n" + json.dumps(
            config, indent=2
        )
    if client == "codex":
        lines = ["# Codex: ~/.codex/config.toml", "[mcp_servers.atrium]", f'url = "{with_project_query(url, project)}"']
        lines.append(f'bearer_token_env_var = "{ENV_VAR}"')
        if token:
            lines.insert(0, f"# and in the environment Codex runs in:\n#   export {ENV_VAR}={token}")
        return "\n".join(lines)
    header = f"Bearer {token}" if token else f"Bearer ${ENV_VAR}"
    lines = [
        "# Any MCP client that speaks Streamable HTTP (JSON responses; protocol 2026-07-28 or 2025-x):",
        f"URL:    {with_project_query(url, project)}",
        f"Header: Authorization: {header}",
    ]
    if project:
        lines.append(f"# the project is on the URL; a client that sends headers may send {PROJECT_HEADER}: {project}")
    # Double quotes: the shell expands $ATRIUM_TOKEN in them (single quotes sent the literal text).
    lines.append(f'Check:  curl -s -H "Authorization: {header}" {url.removesuffix("/mcp")}/api/v1/profile.txt')
    return "\n".join(lines)


def _git(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", "-C", str(directory), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError:
        raise CommandError(
            "--project-from-git needs git on the PATH; or name the project with --project ORIGIN"
        ) from None
    except subprocess.TimeoutExpired:
        raise CommandError(f"git did not answer within {GIT_TIMEOUT_SECONDS} s in {directory}") from None


def git_project(directory: Path) -> tuple[str, Path]:
    """(the project, normalised as https://host/owner/repo, the repository's root) from the origin remote of the
    git repository `directory` is in. CommandError outside a repository, without an origin, or with an origin that
    is no git origin Atrium can key a project by."""
    if not directory.is_dir():
        raise CommandError(f"--dir {directory}: no such directory")
    root = _git(directory, "rev-parse", "--show-toplevel")
    if root.returncode != 0:
        raise CommandError(
            f"{directory} is not inside a git repository: run this in your repository (or pass --dir), or name the "
            "project with --project ORIGIN"
        )
    remote = _git(directory, "remote", "get-url", "origin")
    if remote.returncode != 0 or not remote.stdout.strip():
        raise CommandError(
            f"the git repository at {root.stdout.strip()} has no remote named origin: add one "
            "(git remote add origin URL), or name the project with --project ORIGIN"
        )
    return normalised(remote.stdout.strip(), what="the origin remote"), Path(root.stdout.strip())


def normalised(origin: str, *, what: str) -> str:
    try:
        return f"https://{normalize_origin(origin)}"
    except InvalidOrigin as exc:
        raise CommandError(f"{what} is not a git origin Atrium can name a project by: {exc}") from None


def write_project_file(*, root: Path, client: str, entry: dict[str, Any]) -> Path:
    """Set the `atrium` server in the repository's config file for `client`, keeping every other server."""
    path = root / PROJECT_FILES[client]
    config: dict[str, Any] = {}
    if path.exists():
        try:
            config = json.loads(path.read_text(encoding="utf-8") or "{}")
        except (ValueError, OSError) as exc:
            raise CommandError(f"{path} is not readable JSON ({exc}); fix or move it, then run this again") from None
        if not isinstance(config, dict) or not isinstance(config.get("mcpServers", {}), dict):
            raise CommandError(f"{path} is not an MCP config (an object with mcpServers); fix or move it")
    config.setdefault("mcpServers", {})["atrium"] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return path


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
        parser.add_argument("--user", default=None, help="whose connection (needed unless --registry or --plugin)")
        parser.add_argument("--client", default=None, choices=CLIENTS, help="needed unless --registry or --plugin")
        parser.add_argument("--url", default=None, help="the server's public URL (default: ATRIUM_PUBLIC_URL)")
        parser.add_argument("--with-new-token", action="store_true", help="create a token and put it in the snippet")
        parser.add_argument("--scope", choices=["read", "write"], default="write", help="scope of the new token")
        named = parser.add_mutually_exclusive_group()
        named.add_argument(
            "--project-from-git",
            action="store_true",
            help="name the connection's project from `git remote get-url origin` in --dir (X-Atrium-Project header "
            "or ?project= on the URL)",
        )
        named.add_argument("--project", default=None, metavar="ORIGIN", help="name the connection's project")
        parser.add_argument("--dir", default=".", help="the repository for --project-from-git (default: here)")
        parser.add_argument(
            "--write",
            action="store_true",
            help="with --project-from-git: write the config into the repository (.mcp.json for claude-code, "
            ".cursor/mcp.json for cursor) instead of printing it",
        )
        parser.add_argument(
            "--with-hooks", action="store_true", help="also print the capture hook's settings.json block (claude-code)"
        )
        listing = parser.add_mutually_exclusive_group()
        listing.add_argument("--registry", action="store_true", help="print this server's MCP registry server.json")
        listing.add_argument(
            "--plugin", default=None, metavar="DIR", help="write a Claude Code plugin marketplace (MCP server + hook)"
        )
        parser.add_argument("--registry-name", default=None, help="the server.json name (default: the host reversed)")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["registry"] or opts["plugin"]:
            self._listing(opts)
            return
        if not opts["user"] or not opts["client"]:
            raise CommandError("--user and --client are required (or --registry, or --plugin DIR)")
        user = get_user_model().objects.filter(username=opts["user"]).first()
        if user is None or not user.is_active:
            raise CommandError(f"no active user named {opts['user']!r}")
        self._check_write(opts)
        if opts["with_hooks"] and opts["client"] != "claude-code":
            raise CommandError("--with-hooks is for --client claude-code (Codex and other clients: see the README)")
        if opts["with_hooks"] and opts["scope"] == "read":
            raise CommandError("--with-hooks needs a write token (capture writes): leave --scope at write")
        url, source = endpoint(opts["url"])
        self.stderr.write(f"Server URL {url.removesuffix('/mcp')} from {source}.")
        project, root = None, None
        if opts["project_from_git"]:
            project, root = git_project(Path(opts["dir"]).resolve())
        elif opts["project"]:
            project = normalised(opts["project"], what="--project")
        if project is not None:
            self._say_project(user, project)
        raw = self._token(user, opts)
        if opts["write"]:
            assert root is not None
            entry = server_entry(client=opts["client"], url=url, token=None, project=project)
            path = write_project_file(root=root, client=opts["client"], entry=entry)
            self.stdout.write(f"Wrote the atrium server, project {project}, into {path}")
            return
        self.stdout.write(snippet(client=opts["client"], url=url, token=raw, project=project))
        if opts["with_hooks"]:
            self.stdout.write(hooks_snippet(url=url, token=raw))

    def _listing(self, opts: dict[str, Any]) -> None:
        url, source = endpoint(opts["url"])
        self.stderr.write(f"Server URL {url.removesuffix('/mcp')} from {source}.")
        if opts["registry"]:
            self.stdout.write(json.dumps(server_json(url=url, name=opts["registry_name"]), indent=2))
            return
        directory = Path(opts["plugin"]).resolve()
        if directory.exists() and not directory.is_dir():
            raise CommandError(f"--plugin {directory}: not a directory")
        for path in plugin_write(directory=directory, url=url):
            self.stdout.write(f"Wrote {path}")
        self.stdout.write(
            f"Install it in Claude Code: claude plugin marketplace add {directory} && "
            "claude plugin install atrium@atrium\n"
            f"The MCP server signs in with OAuth on first use; the capture hook needs {ENV_VAR} (a personal write "
            "token) in the environment Claude Code runs in."
        )

    def _check_write(self, opts: dict[str, Any]) -> None:
        if not opts["write"]:
            return
        if not opts["project_from_git"]:
            raise CommandError("--write writes into a repository: use it with --project-from-git")
        if opts["client"] not in PROJECT_FILES:
            raise CommandError(
                f"--write: {opts['client']} has no per-repository config file; paste the printed snippet instead"
            )
        if opts["with_new_token"]:
            raise CommandError(
                "--write with --with-new-token would put a token into a file in the repository; the written config "
                f"reads it from ${ENV_VAR}: drop --with-new-token"
            )

    def _say_project(self, user: Any, project: str) -> None:
        try:
            palace_get(user=user, origin=project)
        except NotFound:
            self.stderr.write(
                f"Note: {user.get_username()} is not a member of {project} (or it does not exist yet): tools will "
                "refuse the connection's project until they are (atrium project create ORIGIN --owner NAME, or an "
                "invitation)."
            )

    def _token(self, user: Any, opts: dict[str, Any]) -> str | None:
        if not opts["with_new_token"]:
            self.stderr.write(
                f"Set {ENV_VAR} first: export {ENV_VAR}=$(atrium token create --user {user.get_username()} "
                f"--name {opts['client']})"
            )
            return None
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
        return raw
