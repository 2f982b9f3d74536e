"""One bounded body reader in front of every HTTP path (config/asgi.py), before Django and the MCP endpoint.

Django's ASGI handler reads a request's whole body into a spooled temporary file before any middleware, view or
permission check runs, so an anonymous client could make the server write gigabytes to disk (a 4 GB body to
/healthz was taken whole, then answered 403). Neither uvicorn nor Django bounds that read: uvicorn has no body size
option, and DATA_UPLOAD_MAX_MEMORY_SIZE is checked only when a view reads `request.body`, after the spool. So this
wrapper sits between uvicorn and the application and passes the body through as it arrives, counting it:

- a `Content-Length` above the path's limit is answered 413 before a byte of the body is read;
- a body that passes the limit while it arrives (chunked, or longer than announced) is answered 413 at once, and
  the rest is not read;
- a body that has not arrived within ATRIUM_BODY_TIMEOUT seconds is answered 408.

Each refusal carries `Connection: close`, so uvicorn drops the connection instead of reading on, and the application
is told the client went away (`http.disconnect`): Django's read ends with RequestAborted and it answers nothing.
Nothing is buffered here, so a large upload costs no memory beyond what the application keeps.

The limit is ATRIUM_MAX_BODY_BYTES, except POST /api/v1/import (ATRIUM_MAX_IMPORT_BYTES, a whole export document),
POST of transcripts to backfill (ATRIUM_MAX_UPLOAD_BYTES: config/asgi.py's UPLOAD_PATHS) and /mcp
(ATRIUM_MCP_MAX_BODY_BYTES, whose own reader, api/mcp/body.py, applies the same rule and time limit).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from api.mcp.body import declared_length  # one Content-Length parse for the MCP reader and this one

Scope = dict[str, Any]
Message = dict[str, Any]
App = Callable[[Scope, Any, Any], Awaitable[None]]


@dataclass(frozen=True)
class BodyRule:
    limit: int
    setting: str  # named in the refusal, so an operator knows which one to raise
    timeout: float
    timeout_setting: str
    json_rpc: bool = False  # the MCP endpoint's clients expect a JSON-RPC error body


async def send_refusal(send: Any, rule: BodyRule, status: int) -> None:
    if status == 413:
        message = f"request body is larger than {rule.limit} bytes ({rule.setting})"
    else:
        message = f"request body did not arrive within {rule.timeout:g} s ({rule.timeout_setting}); send it at once"
    payload: dict[str, Any] = (
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
        if rule.json_rpc
        else {"detail": message}
    )
    body = json.dumps(payload).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """Wraps an ASGI app; `rule_for(scope)` gives each HTTP request's limit and time limit."""

    def __init__(self, app: App, rule_for: Callable[[Scope], BodyRule]) -> None:
        self.app = app
        self.rule_for = rule_for

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rule = self.rule_for(scope)
        declared = declared_length(scope)
        if declared is not None and declared > rule.limit:
            await send_refusal(send, rule, 413)
            return
        guard = _Guard(rule, receive, send)
        await self.app(scope, guard.receive, guard.send)


class _Guard:
    """The counting `receive` and the matching `send` of one request."""

    def __init__(self, rule: BodyRule, receive: Any, send: Any) -> None:
        self.rule = rule
        self._receive = receive
        self._send = send
        self.size = 0
        self.done = False  # the whole body has arrived: later receives (disconnect listeners) pass straight on
        self.refused = False
        self.started = False  # the application has begun its response: a refusal can no longer be sent
        self.deadline = asyncio.get_running_loop().time() + rule.timeout

    async def receive(self) -> Message:
        if self.refused:
            return {"type": "http.disconnect"}
        if self.done:
            return dict(await self._receive())
        try:
            async with asyncio.timeout_at(self.deadline):
                message = dict(await self._receive())
        except TimeoutError:
            return await self._refuse(408)
        if message["type"] == "http.request":
            self.size += len(message.get("body", b""))
            if self.size > self.rule.limit:
                return await self._refuse(413)
            if not message.get("more_body", False):
                self.done = True
        return message

    async def send(self, message: Message) -> None:
        if self.refused:
            return  # the client has its answer; whatever the application says after it is dropped
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)

    async def _refuse(self, status: int) -> Message:
        self.refused = True
        if not self.started:
            await send_refusal(self._send, self.rule, status)
        return {"type": "http.disconnect"}
