"""Where every MCP tool body runs with its caller: `run(body)`, the one function between the protocol and the services.

A tool (api/mcp/tools/) is an `async def` declared with `@tool` that hands `run` a sync body taking a `ToolCall`:
`return await run(lambda call: _forget(call, id=id, reason=reason))`. `run`:

1. loads the caller (user + token) from the verified bearer token — never from an argument;
2. refuses a write tool to a `read` token (the write flag is the tool's spec: api/mcp/registry.py; tools/list
   already hides write tools from such tokens);
3. runs the body on the request's ORM thread (config/asgi.py gives each MCP request its own, api/mcp/workers.py),
   (one request, one thread);
4. stops waiting after ATRIUM_MCP_TOOL_TIMEOUT seconds with a `ToolError` that says so (the body cannot be
   interrupted on its thread: it runs to its end, and the thread returns to the pool only then — workers.py);
5. turns domain errors into `ToolError`s — an `isError` result with a message that says what to do; anything else
   is logged here and reaches the client as the SDK's generic "Error executing tool <name>", never a traceback;
6. returns the text rendering (what the model reads) with only the server's wrappers left in it, balanced, and
   `structuredContent` (validated against the tool's outputSchema by the SDK) with the same rule for every string
   (memory.text.seal_text / seal_structured: the exit every stored text takes, whatever was stored), and in
   `_meta` the milliseconds the body took; the same time goes into the
   response's `Server-Timing` header (api/mcp/timing.py).

`_invoke` is the single place a tool body runs for a caller: it runs the body acting as that caller for row-level
security (palace/rls.py), and restores the thread's previous context (none) when the body ends, also on error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from accounts.caller import Caller
from accounts.models import ApiToken
from accounts.tokens import token_get_live
from api.mcp import schemas, text
from api.mcp.connection import Connection, as_origin, current_connection
from api.mcp.registry import ToolSpec, current_tool
from api.mcp.timing import current_timing
from api.mcp.workers import abandon_thread
from memory.text import seal_structured, seal_text
from palace import rls
from palace.errors import AtriumError, NotFound, PermissionDenied
from palace.selectors import palace_get

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from palace.actors import Actor
    from palace.models import Palace

log = logging.getLogger("atrium.mcp")

# The `project` value that addresses the caller's personal palace even when the token has a default project (no git
# origin can be spelled so: palace.origins.normalize_origin wants a host and a path).
PERSONAL = "personal"

SERVICE_MS_META = "dev.atrium/service_ms"

# The token row the verifier loaded for this request (with its user), so a tool need not load it again. Set in the
# request's own context by the SDK's auth middleware (api/mcp/server.py); tool handlers run under a copy of it.
verified_token: ContextVar[ApiToken | None] = ContextVar("atrium_verified_token", default=None)


class Unauthenticated(PermissionDenied):
    """No verified token on this request (cannot happen behind the SDK's auth middleware; kept as a guard)."""


ChosenBy = Literal["argument", "connection", "token", "personal"]


@dataclass(frozen=True)
class Chosen:
    """The palace a tool addressed, and which level of the precedence chose it (every result says so)."""

    palace: Palace
    by: ChosenBy


class DefaultProjectGone(NotFound):
    """The token's default project is not one of the caller's palaces any more."""


@dataclass(frozen=True)
class ToolCall:
    """What a tool body gets: who calls, which tool (for its write flag), the project its connection names, and the
    palace it chose (`chosen`, filled by `palace`; the runner labels the result with it)."""

    caller: Caller
    spec: ToolSpec
    connection: Connection | None = None
    chosen: list[Chosen] = field(default_factory=list)

    @property
    def user(self) -> AbstractBaseUser:
        return self.caller.user

    @property
    def actor(self) -> Actor:
        return self.caller.actor

    @property
    def token_id(self) -> int | None:
        return self.caller.token.pk if self.caller.token is not None else None

    def palace(
        self, project: str | None, *, write: bool | None = None, gone_default: Literal["error", "personal"] = "error"
    ) -> Palace:
        """The palace the tool addresses, checked for writing when the tool writes (or as `write` says), first
        found of:

        1. `project`, the tool's argument: a git origin of a project the caller is a member of, or "personal";
        2. the project this connection names (api/mcp/connection.py), the same way;
        3. the token's default project;
        4. the caller's personal palace.

        A named project the caller is not a member of raises NotFound exactly like one that does not exist, with a
        message that says where the name came from (the argument, the connection), so the agent knows what to
        fix; so does a token's default project the caller no longer belongs to (or, with gone_default="personal",
        for a tool that only adds the project to the personal palace, that level is passed over). Never a palace
        the agent did not choose: a connection's project that fails is an error, not a fall back to personal, so
        a save meant for the project never lands, silently, somewhere else. The choice is recorded in `chosen`."""
        write = self.spec.write if write is None else write
        chosen = self._choose(project, write=write, gone_default=gone_default)
        self.chosen.append(chosen)
        return chosen.palace

    def _choose(self, project: str | None, *, write: bool, gone_default: str) -> Chosen:
        if project is not None and project.strip():
            try:
                return Chosen(self._named(project, write=write), "argument")
            except NotFound:
                raise NotFound(text.palace_not_found(project)) from None
        named = self.connection.project() if self.connection is not None else None
        if named is not None:
            value, where = named
            try:
                return Chosen(self._named(value, write=write), "connection")
            except NotFound:
                raise NotFound(text.connection_project_not_found(value, where)) from None
            except PermissionDenied as exc:
                raise PermissionDenied(f"{exc.message} (the project {where} names)") from None
        token = self.caller.token
        if token is not None and token.default_project_id is not None:
            try:
                return Chosen(palace_get(user=self.user, palace_id=token.default_project_id, write=write), "token")
            except NotFound:
                if gone_default == "error":
                    raise DefaultProjectGone(text.default_project_gone()) from None
            except PermissionDenied as exc:
                raise PermissionDenied(f"{exc.message} (this token's default project)") from None
        try:
            return Chosen(palace_get(user=self.user, write=write), "personal")
        except NotFound:
            raise NotFound(text.palace_not_found(None)) from None

    def _named(self, project: str, *, write: bool) -> Palace:
        origin = None if project.strip().lower() == PERSONAL else as_origin(project)
        return palace_get(user=self.user, origin=origin, write=write)

    def personal(self) -> Palace:
        """The caller's personal palace, whatever the precedence says (the standing profile's own); not a choice
        the result is labelled with."""
        try:
            return palace_get(user=self.user)
        except NotFound:
            raise NotFound(text.palace_not_found(None)) from None


def current_token_id() -> int:
    """The ApiToken id of the bearer token the SDK verified for this request."""
    token = get_access_token()
    claims = (token.claims or {}) if token is not None else {}
    token_id = claims.get("token_id")
    if token is None or not isinstance(token_id, int):
        raise Unauthenticated("not authenticated: send Authorization: Bearer <token>")
    return token_id


def _verified_scopes() -> list[str]:
    token = get_access_token()
    return list(token.scopes) if token is not None else []


def load_caller(token_id: int) -> Caller:
    """The caller for a verified token id (sync: runs on the ORM thread). The row the verifier loaded for this very
    request is reused; otherwise it is loaded (and checked) again."""
    row = verified_token.get()
    if row is not None and row.pk == token_id:
        return Caller(user=row.user, token=row)
    row = token_get_live(token_id=token_id)
    if row is None:
        raise Unauthenticated("this token is no longer valid; create a new one with `atrium token create`")
    return Caller(user=row.user, token=row)


def _invoke[Out: BaseModel](
    spec: ToolSpec, token_id: int, connection: Connection | None, body: Callable[[ToolCall], tuple[Out, str]]
) -> tuple[Out, str, float]:
    """Run one tool body for its caller, on the request's ORM thread."""
    caller = load_caller(token_id)
    if spec.write:
        caller.require_write()
    started = time.perf_counter()
    call = ToolCall(caller=caller, spec=spec, connection=connection)
    try:
        with rls.acting_as(caller.user):  # row-level security: only this caller's palaces, until the body returns
            out, rendered = body(call)
    finally:
        service_ms = (time.perf_counter() - started) * 1000
        timing = current_timing.get()
        if timing is not None:  # the request's Server-Timing (api/mcp/timing.py)
            timing.service_ms += service_ms
            timing.tool_calls += 1
    out, rendered = _labelled(out, rendered, call.chosen)
    return out, rendered, service_ms


def _labelled[Out: BaseModel](out: Out, rendered: str, chosen: list[Chosen]) -> tuple[Out, str]:
    """The palace the body chose, and why, in the result: `palaceUsed` for every output that declares it
    (schemas.PalaceScoped) and a last line of the text. Done here, once, so no tool that resolves a palace can
    leave it out."""
    if not chosen or "palace_used" not in type(out).model_fields:
        return out, rendered
    first = chosen[0]
    kind: Literal["personal", "project"] = "personal" if first.palace.kind == "personal" else "project"
    used = schemas.PalaceUsed(id=first.palace.pk, name=first.palace.label, kind=kind, chosen_by=first.by)
    return out.model_copy(update={"palace_used": used}), text.palace_used(rendered, first.palace.label, first.by)


async def _invoke_within_limit[Out: BaseModel](
    spec: ToolSpec, token_id: int, body: Callable[[ToolCall], tuple[Out, str]]
) -> tuple[Out, str, float]:
    limit = float(settings.ATRIUM_MCP_TOOL_TIMEOUT)
    deadline = asyncio.timeout(limit)
    connection = current_connection.get()
    try:
        async with deadline:
            return await sync_to_async(_invoke)(spec, token_id, connection, body)
    except TimeoutError:
        if not deadline.expired():
            raise  # a timeout inside the body (a socket's), not the limit
        abandon_thread()
        log.warning("MCP tool %s passed its time limit of %g s", spec.name, limit)
        raise ToolError(text.tool_timeout(spec.name, limit, write=spec.write)) from None


async def run[Out: BaseModel](body: Callable[[ToolCall], tuple[Out, str]]) -> CallToolResult:
    """Run the current tool's body for the caller behind this request (see the module docstring)."""
    spec = current_tool()
    try:
        token_id = current_token_id()
        if spec.write and "write" not in _verified_scopes():  # an OAuth token narrower than its grant, too
            raise PermissionDenied("this token has the read scope; create a write token to change memories")
        out, rendered, service_ms = await _invoke_within_limit(spec, token_id, body)
    except AtriumError as exc:
        raise ToolError(
            seal_text(text.domain_error(exc, tool=spec.name))
        ) from None  # a message may quote a stored name
    except ValidationError as exc:
        raise ToolError(seal_text(text.invalid_input(exc))) from None
    except ToolError:
        raise
    except Exception:
        log.exception("MCP tool %s failed", spec.name)
        raise
    # The exit every tool's result takes (memory/text/wrapping.py): only the server's own wrappers, balanced, in the
    # text and in every structured string. Whatever was stored and wherever a renderer put it.
    return CallToolResult(
        content=[TextContent(type="text", text=seal_text(rendered))],
        structured_content=seal_structured(out.model_dump(mode="json", by_alias=True)),
        _meta={SERVICE_MS_META: round(service_ms, 3)},
    )
