"""The project a connection names once, so an agent working in a repository need not pass `project` on every call:
an `X-Atrium-Project` header, or `?project=` on the MCP URL (`atrium mcp-config --project-from-git` writes one).

The guard in front of the SDK's app (api/mcp/server.py) reads it from the HTTP request into `current_connection`;
the SDK runs tool handlers under a copy of the request's context, so the runner (api/mcp/runner.py) finds it there.
It only names a project: the acting user still comes from the token, and membership is checked when a tool uses it.
Order of precedence where a tool addresses one palace: the tool's `project` argument, then the connection's, then
the token's default project, then the personal palace.

This module imports nothing else of api/mcp.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from palace.errors import InvalidInput
from palace.origins import InvalidOrigin, normalize_origin

HEADER = "X-Atrium-Project"
QUERY_PARAM = "project"
# As long as a tool's `project` argument may be (api/mcp/schemas/common.py, Project).
MAX_CHARS = 400
WHERE = {"header": f"the {HEADER} header", "query": f"?{QUERY_PARAM}= on the MCP URL"}


@dataclass(frozen=True)
class Connection:
    """What one request's connection says about its project: each (where, value) it was named in."""

    names: tuple[tuple[str, str], ...]
    # scheme://host[:port] the request came in on: the OAuth audience check names this server's /mcp with it.
    base: str = ""

    def project(self) -> tuple[str, str] | None:
        """(value, where) of the project this connection names, or None. Checked here, when a tool uses it, so a
        tool that needs no palace still works: a value over the limit, or a header and a URL that name different
        projects, is an InvalidInput that names where it came from."""
        for where, value in self.names:
            if len(value) > MAX_CHARS:
                raise InvalidInput(
                    f"{WHERE[where]} is over {MAX_CHARS} characters: send one git origin (e.g. github.com/org/repo) "
                    'or "personal"',
                    field="project",
                )
        keys = {_key(value) for _, value in self.names}
        if len(keys) > 1:
            named = "; ".join(f"{WHERE[where]}: {value!r}" for where, value in self.names)
            raise InvalidInput(
                f"this connection names more than one project ({named}): name one, in the {HEADER} header or as "
                f"?{QUERY_PARAM}= on the MCP URL, not both",
                field="project",
            )
        if not self.names:
            return None
        where, value = self.names[0]
        return value, WHERE[where]


def as_origin(value: str) -> str:
    """`host/owner/repo` — a project's key, the name every result gives its palace, and the spelling the tools'
    descriptions show — is taken as the origin it stands for (palace.origins.normalize_origin wants a scheme or the
    scp form); every other spelling is passed on as it is."""
    text = value.strip()
    if "://" not in text and ":" not in text and "/" in text:
        return f"https://{text}"
    return text


def _key(value: str) -> str:
    """Two spellings of one origin (git@github.com:a/b.git, https://github.com/a/b) name one project."""
    try:
        return normalize_origin(as_origin(value))
    except InvalidOrigin:
        return value.strip().lower()


def connection_from_scope(scope: dict[str, Any]) -> Connection:
    """The project names of an ASGI HTTP request (blank values are no name)."""
    names: list[tuple[str, str]] = []
    wanted = HEADER.lower().encode()
    for key, raw in scope.get("headers") or []:
        if key.lower() == wanted:
            names.append(("header", raw.decode("utf-8", "replace").strip()))
    query = (scope.get("query_string") or b"").decode("utf-8", "replace")
    for key, value in parse_qsl(query, keep_blank_values=False):
        if key == QUERY_PARAM:
            names.append(("query", value.strip()))
    host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
    base = f"{scope.get('scheme', 'http')}://{host}" if host else ""
    return Connection(names=tuple((where, value) for where, value in names if value), base=base)


current_connection: ContextVar[Connection | None] = ContextVar("atrium_mcp_connection", default=None)
