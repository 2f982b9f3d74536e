"""An MCP request's body, read whole before the request takes an ORM thread (config/asgi.py).

Every MCP request holds one of ATRIUM_MCP_THREADS database threads for its whole life (api/mcp/workers.py). Were the
body read after that, a client that opens a request and trickles its body would hold a thread — and a few such
clients every thread — while sending nothing useful. So the body is read first, on the event loop, where a waiting
client costs a coroutine: at most ATRIUM_MCP_MAX_BODY_BYTES (413 beyond; a Content-Length above it is refused before
any byte is read) within ATRIUM_MCP_BODY_TIMEOUT seconds (408 after). The SDK's app then reads the buffered body.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any


class BodyRefused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ClientGone(Exception):
    """The client disconnected before its body arrived: nothing to answer."""


def declared_length(scope: dict[str, Any]) -> int | None:
    for name, value in scope.get("headers") or []:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def read_body(scope: dict[str, Any], receive: Any, *, limit: int, timeout: float) -> bytes:
    """The whole request body, or BodyRefused (408 / 413) or ClientGone."""
    too_large = BodyRefused(413, f"request body is larger than {limit} bytes (ATRIUM_MCP_MAX_BODY_BYTES)")
    declared = declared_length(scope)
    if declared is not None and declared > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientGone
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise too_large
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
    except TimeoutError:
        raise BodyRefused(
            408, f"request body did not arrive within {timeout:g} s (ATRIUM_MCP_BODY_TIMEOUT); send it at once"
        ) from None


def replay(body: bytes, receive: Any) -> Any:
    """A `receive` that hands the app the buffered body once, then passes on what the client sends (a disconnect)."""
    sent = False

    async def receive_buffered() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return dict(await receive())

    return receive_buffered


async def refuse(send: Any, refused: BodyRefused) -> None:
    """The refusal as a JSON-RPC error body, and `Connection: close` (the rest of the body is not read)."""
    payload = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": refused.message}}
    headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": refused.status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(payload).encode()})
