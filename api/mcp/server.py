"""The MCP server: the one `MCPServer`, its bearer-token verifier, the tools of the registry (api/mcp/registry.py,
filled by api/mcp/tools/) with tools/list scoped to the token, and the HTTP guard in front of the SDK's app."""

from __future__ import annotations

import json
import re
import time
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import InterfaceError, OperationalError, connections
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl

from accounts.models import TOKEN_PREFIX
from accounts.oauth import oauth_resource, oauth_token_verify, public_base
from accounts.tokens import token_verify
from api.mcp import tools  # noqa: F401  (its @tool declarations fill the registry)
from api.mcp.arguments import tool_from_spec
from api.mcp.connection import connection_from_scope, current_connection
from api.mcp.registry import RESOURCES, TOOLS, write_tool_names
from api.mcp.runner import verified_token
from api.mcp.text import INSTRUCTIONS
from api.mcp.timing import current_timing

if TYPE_CHECKING:
    from accounts.models import ApiToken


def _verify(raw: str, base: str) -> tuple[ApiToken, list[str]] | None:
    """A personal token (`atr_…`, the same hashed lookup the REST API uses), or an OAuth access token bound to this
    server's /mcp (accounts/oauth.py): the row the caller acts through, and its scopes."""
    if raw.startswith(TOKEN_PREFIX):
        row = token_verify(raw)
        return (row, row.scopes) if row is not None else None
    if not base:
        return None
    resource = oauth_resource(base)
    return oauth_token_verify(raw, resources=(resource, resource + "/"))


def _token_verify_first_query(raw: str, base: str) -> tuple[ApiToken, list[str]] | None:
    """`_verify`, the first query of every MCP request, on the request's ORM thread. That thread keeps its
    connection between requests without Django's per-request health check (api/mcp/workers.py), so a connection the
    server dropped meanwhile (restart, idle timeout) fails here first: close it and run the (read-only, idempotent)
    check once more on a new one."""
    try:
        return _verify(raw, base)
    except (OperationalError, InterfaceError):
        for conn in connections.all(initialized_only=True):
            conn.close()
        return _verify(raw, base)


class DjangoTokenVerifier(TokenVerifier):
    """Bearer token = a personal ApiToken, or an OAuth access token acting through its grant (an ApiToken row)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        started = time.perf_counter()
        connection = current_connection.get()
        base = connection.base if connection is not None else ""
        found = await sync_to_async(_token_verify_first_query)(token, base)
        timing = current_timing.get()
        if timing is not None:  # the request's Server-Timing (api/mcp/timing.py)
            timing.auth_ms += (time.perf_counter() - started) * 1000
        row, scopes = found if found is not None else (None, [])
        verified_token.set(row)
        if row is None:
            return None
        return AccessToken(
            token=token,
            client_id=f"oauth:{row.oauth_application_id}" if row.is_oauth_grant else f"apitoken:{row.pk}",
            subject=str(row.user_id),
            scopes=["memory", *scopes],
            claims={"token_id": row.pk, "token_label": row.label},
        )


# Tools that change memories, as declared with `@tool(write=True)`. A `read` token neither sees them in tools/list
# nor may call them (the runner refuses too: api/mcp/runner.py). Every other tool is a read tool.
WRITE_TOOLS = write_tool_names()


def token_can_write() -> bool:
    token = get_access_token()
    return token is not None and "write" in token.scopes


class ScopedToolList(ServerMiddleware[Any]):
    """tools/list varies by the authorization presented: a read token is shown only the read tools.

    The 2026-07-28 spec allows this ("MAY vary by the authorization presented on the request"); list results are
    marked cacheScope "private" by the SDK, so a client never shares one token's list with another.
    """

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "tools/list" and isinstance(result, dict) and not token_can_write():
            tools = result.get("tools") or []
            result = {**result, "tools": [t for t in tools if t.get("name") not in WRITE_TOOLS]}
        return result


DISTRIBUTION = "atrium"


def server_version() -> str:
    """The installed distribution's version (serverInfo.version): from the package metadata, so it cannot drift from
    pyproject.toml; "0+unknown" only when running from a tree that was never installed."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"


mcp = MCPServer(
    "atrium",
    version=server_version(),
    # Each tool with the argument convention (snake_case, camelCase accepted, unknown ones refused) and its argument
    # errors one line per problem: api/mcp/arguments.py.
    tools=[tool_from_spec(spec) for spec in TOOLS.values()],
    middleware=[ScopedToolList()],
    instructions=INSTRUCTIONS,
    log_level="WARNING",
    token_verifier=DjangoTokenVerifier(),
    auth=AuthSettings(
        issuer_url=AnyHttpUrl(settings.ATRIUM_PUBLIC_URL or "http://127.0.0.1:8000"),
        resource_server_url=None,
        required_scopes=["memory"],
        validate_token_resource=False,
    ),
)
for res in RESOURCES.values():
    mcp.resource(res.uri, name=res.name, title=res.title, description=res.description, mime_type=res.mime_type)(res.fn)


def transport_security() -> TransportSecuritySettings:
    hosts: list[str] = []
    for host in settings.ALLOWED_HOSTS:
        if host == "*":
            return TransportSecuritySettings(enable_dns_rebinding_protection=False)
        hosts += [host, f"{host}:*"]
    origins = list(settings.ATRIUM_ALLOWED_ORIGINS)
    for host in ("127.0.0.1", "localhost"):
        origins += [f"http://{host}", f"http://{host}:*"]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


LOCAL_ORIGIN = re.compile(r"^https?://(127\.0\.0\.1|localhost|\[::1\])(:\d{1,5})?$")


def origin_allowed(origin: str) -> bool:
    """Browsers send Origin; a page on another site must not reach the endpoint (DNS rebinding)."""
    return origin in settings.ATRIUM_ALLOWED_ORIGINS or LOCAL_ORIGIN.match(origin) is not None


async def _refuse(send: Any, status: int, message: str, headers: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}).encode()
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json"), *headers]}
    )
    await send({"type": "http.response.body", "body": body})


def _with_resource_metadata(send: Any, base: str) -> Any:
    """A 401 from the SDK's auth middleware names where this resource's metadata is (RFC 9728 §5.1), so an OAuth
    client discovers the sign-in from the challenge; the URL is built like every public URL here
    (ATRIUM_PUBLIC_URL, else the request's origin)."""
    metadata = f"{public_base(base)}/.well-known/oauth-protected-resource/mcp"

    async def send_challenge(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start" and message.get("status") == 401 and base:
            headers = []
            for key, value in message.get("headers", []):
                if key.lower() == b"www-authenticate" and b"resource_metadata=" not in value:
                    value = value + f', resource_metadata="{metadata}"'.encode()
                headers.append((key, value))
            message = dict(message, headers=headers)
        await send(message)

    return send_challenge


def guarded(app: Any) -> Any:
    """Two checks in front of the SDK's app, which hold whatever ALLOWED_HOSTS says (with `*` the SDK's own
    rebinding protection is off, and with it its Origin check):

    - a foreign `Origin` gets 403;
    - GET gets 405: this server is stateless and sends nothing unprompted, so a legacy standalone SSE stream
      would only hold a connection open forever (the spec lets a server refuse it with 405).

    It also reads the project the connection names (X-Atrium-Project, ?project=) for the tools.
    """

    async def guard(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            headers = dict(scope.get("headers") or [])
            origin = headers.get(b"origin", b"").decode("latin-1")
            if origin and not origin_allowed(origin):
                await _refuse(send, 403, "Origin not allowed", [])
                return
            if scope.get("method") == "GET":
                await _refuse(send, 405, "POST JSON-RPC messages to this endpoint", [(b"allow", b"POST")])
                return
            # The project this connection names (api/mcp/connection.py): the SDK runs the tool handlers under a
            # copy of this request's context, as it does for the verified token.
            connection = connection_from_scope(scope)
            reset = current_connection.set(connection)
            try:
                await app(scope, receive, _with_resource_metadata(send, connection.base))
            finally:
                current_connection.reset(reset)
            return
        await app(scope, receive, send)

    return guard


def build_mcp_app() -> Any:
    return guarded(
        mcp.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=True,
            json_response=True,
            transport_security=transport_security(),
            max_request_body_size=settings.ATRIUM_MCP_MAX_BODY_BYTES,
        )
    )
