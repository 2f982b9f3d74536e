"""An in-process official MCP client over httpx2.ASGITransport against config.asgi.application.

Tests are sync and drive the client with `asyncio.run`; database setup happens in the test before that, and the
server's ORM work runs on its own threads, so these tests use a transactional database.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

MODES = ("auto", "legacy")
BASE = "http://testserver"


@contextlib.asynccontextmanager
async def mcp_client(
    raw_token: str, mode: str = "auto", *, url: str = f"{BASE}/mcp", headers: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    """`headers` go on every request of the connection (as a client's configured headers do, e.g. X-Atrium-Project);
    `url` may carry a query (?project=…)."""
    from config.asgi import application

    transport = httpx2.ASGITransport(app=application)
    sent = {"Authorization": f"Bearer {raw_token}", **(headers or {})}
    async with (
        httpx2.AsyncClient(transport=transport, base_url=BASE, headers=sent, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,  # type: ignore[arg-type]
    ):
        yield client


def run[R](coro: Awaitable[R]) -> R:
    return asyncio.run(coro)  # type: ignore[arg-type]


async def call(token: str, tool: str, args: dict[str, Any] | None = None, *, mode: str = "auto") -> Any:
    async with mcp_client(token, mode) as client:
        return await client.call_tool(tool, args or {})


async def call_each(
    token: str,
    calls: list[tuple[str, dict[str, Any]]],
    mode: str = "auto",
    *,
    url: str = f"{BASE}/mcp",
    headers: dict[str, str] | None = None,
) -> list[Any]:
    """Each (tool, arguments) in turn, in one client session; the results in order."""
    async with mcp_client(token, mode, url=url, headers=headers) as client:
        return [await client.call_tool(name, args) for name, args in calls]


def call_sync(token: str, tool: str, args: dict[str, Any] | None = None, *, mode: str = "auto") -> Any:
    return run(call(token, tool, args, mode=mode))


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def raw_post(
    body: bytes | dict[str, Any] | list[Any],
    *,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    path: str = "/mcp",
    method: str = "POST",
) -> httpx2.Response:
    """One HTTP request at the wire level (for 401/403/413 and malformed JSON-RPC)."""
    from config.asgi import application

    sent = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-11-25",
        **(headers or {}),
    }
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=application), base_url=BASE) as http:
        return await http.request(method, path, content=payload, headers=sent)


def raw_post_sync(body: bytes | dict[str, Any] | list[Any], **kwargs: Any) -> httpx2.Response:
    return run(raw_post(body, **kwargs))


@pytest.fixture
def mcp_db(transactional_db: Any) -> None:
    """The server answers on other threads: they must see committed rows."""


@pytest.fixture(autouse=True)
def _no_tool_time_limit_under_load(settings: Any) -> None:
    """The tool time limit (ATRIUM_MCP_TOOL_TIMEOUT, 30 s) guards a server; on a shared, loaded test machine a
    20,000-character save was measured at 70 s, so the suite's tool calls get a generous limit, and the limit itself
    is tested where a test sets it (test_slow_clients.py)."""
    settings.ATRIUM_MCP_TOOL_TIMEOUT = 600


@pytest.fixture(autouse=True)
def _close_mcp_threads() -> Any:
    """The MCP ORM threads keep their database connections between requests; end them after each test so the test
    database can be flushed and dropped."""
    yield
    from config.asgi import lifecycle

    lifecycle.close_workers()


@pytest.fixture
def tokens(mcp_db: None, alice: Any, charlie: Any, token_for: Callable[..., str]) -> dict[str, str]:
    return {
        "alice": token_for(alice),
        "charlie": token_for(charlie),
        "alice_read": token_for(alice, scope="read", label="read"),
    }
