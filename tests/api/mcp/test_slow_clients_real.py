"""Over real HTTP (uvicorn started by `atrium up`, one MCP database thread): clients that open a request and trickle
its body do not stop a normal client's tool call, and are themselves answered 408 when their time is up."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ops.bench import local_server

pytestmark = pytest.mark.slow
BODY_TIMEOUT = 8
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_stats", "arguments": {}}}


async def _trickle(url: str, token: str, stop: asyncio.Event) -> tuple[str, float]:
    """Send the headers and a byte of the body every half second until told to stop; return the status line."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    body = json.dumps(CALL).encode()
    head = (
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    writer.write(head.encode())
    started = time.monotonic()
    answer = asyncio.ensure_future(reader.readline())
    try:
        for byte in body[:-1]:
            if answer.done() or stop.is_set():
                break
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.wait([answer], timeout=0.5)
        status = (await asyncio.wait_for(answer, timeout=BODY_TIMEOUT * 2)).decode().strip()
        # To the end (the answer says `connection: close`): headers and the chunked body may come in separate
        # segments, and one read(4096) returned only the headers once.
        rest = (await asyncio.wait_for(reader.read(), timeout=5)).decode(errors="replace")
        return f"{status}\n{rest}", time.monotonic() - started
    finally:
        writer.close()


async def _normal_call(url: str, token: str) -> Any:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,  # type: ignore[arg-type]
    ):
        return await client.call_tool("memory_stats", {})


def test_trickling_clients_do_not_block_a_normal_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATRIUM_MCP_THREADS", "1")
    monkeypatch.setenv("ATRIUM_MCP_BODY_TIMEOUT", str(BODY_TIMEOUT))
    with local_server(2) as (url, tokens):

        async def scenario() -> tuple[Any, float, list[tuple[str, float]]]:
            stop = asyncio.Event()
            slow_ones = [asyncio.ensure_future(_trickle(url, tokens[1], stop)) for _ in range(3)]
            await asyncio.sleep(1)  # the three are inside the server, their bodies arriving byte by byte
            started = time.monotonic()
            result = await asyncio.wait_for(_normal_call(url, tokens[0]), timeout=BODY_TIMEOUT - 2)
            served_in = time.monotonic() - started
            assert not any(task.done() for task in slow_ones)  # they were still trickling meanwhile
            return result, served_in, list(await asyncio.gather(*slow_ones))

        result, served_in, slow = asyncio.run(scenario())
    print(f"normal call served in {served_in:.2f} s beside three trickling clients")
    assert not result.is_error and "total" in result.structured_content
    for answer, _took in slow:
        assert answer.startswith("HTTP/1.1 408"), answer
        assert "ATRIUM_MCP_BODY_TIMEOUT" in answer
