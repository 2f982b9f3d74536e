"""One slow client must not block MCP for everyone: a request's body is read before it takes one of the
ATRIUM_MCP_THREADS database threads (bounded in size and time: 413 / 408), and a tool call has a time limit
(ATRIUM_MCP_TOOL_TIMEOUT) that ends in a tool error saying so."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from memory.providers import embeddings
from tests.api.mcp.conftest import call, raw_post, run, text_of
from tests.fakes.openai_server import FakeOpenAI, slow


@pytest.fixture
def fresh_threads() -> Iterator[None]:
    """Make the next MCP request build its ORM threads from the current settings (ATRIUM_MCP_THREADS)."""
    from config.asgi import lifecycle

    lifecycle.close_workers()
    yield
    lifecycle.close_workers()


STATS = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_stats", "arguments": {}}}


def _scope(token: str, length: int) -> dict[str, Any]:
    headers = [
        (b"host", b"testserver"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", b"2025-11-25"),
        (b"authorization", f"Bearer {token}".encode()),
        (b"content-length", str(length).encode()),
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


async def _trickling_request(token: str, sent: list[dict[str, Any]]) -> None:
    """A client that sends the start of its body and then nothing more."""
    from config.asgi import application

    body = json.dumps(STATS).encode()
    parts = [{"type": "http.request", "body": body[:10], "more_body": True}]

    async def receive() -> dict[str, Any]:
        if parts:
            return parts.pop()
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await application(_scope(token, len(body)), receive, send)


def test_a_trickling_body_holds_no_database_thread_and_gets_408(
    tokens: dict[str, str], settings: Any, fresh_threads: None
) -> None:
    settings.ATRIUM_MCP_THREADS = 1
    settings.ATRIUM_MCP_BODY_TIMEOUT = 8

    async def scenario() -> tuple[list[list[dict[str, Any]]], Any]:
        sent: list[list[dict[str, Any]]] = [[], [], []]
        slow_ones = [asyncio.create_task(_trickling_request(tokens["charlie"], out)) for out in sent]
        await asyncio.sleep(0.3)  # all three are inside the server, waiting for their bodies
        normal = await asyncio.wait_for(raw_post(STATS, token=tokens["alice"]), timeout=6)
        assert not any(task.done() for task in slow_ones)  # still waiting while the normal call was served
        await asyncio.gather(*slow_ones)
        return sent, normal

    sent, normal = run(scenario())
    assert normal.status_code == 200 and "result" in normal.json()  # served while three bodies trickled
    for messages in sent:
        assert messages[0]["status"] == 408
        error = json.loads(messages[1]["body"])["error"]["message"]
        assert "did not arrive within 8 s" in error and "ATRIUM_MCP_BODY_TIMEOUT" in error


def test_a_declared_body_over_the_limit_is_refused_before_it_is_read(tokens: dict[str, str], settings: Any) -> None:
    from config.asgi import application

    settings.ATRIUM_MCP_MAX_BODY_BYTES = 2048
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(3600)  # never called: the header alone decides
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def scenario() -> Any:
        await asyncio.wait_for(application(_scope(tokens["alice"], 4096), receive, send), timeout=10)
        return await raw_post(STATS, token=tokens["alice"])  # positive control: a small body is served

    small = run(scenario())
    assert sent[0]["status"] == 413
    assert "larger than 2048 bytes" in json.loads(sent[1]["body"])["error"]["message"]
    assert small.status_code == 200 and "result" in small.json()


@pytest.fixture
def slow_embeddings(settings: Any) -> Iterator[FakeOpenAI]:
    """Query embeddings from a fake OpenAI-compatible endpoint that a test can slow down."""
    embeddings.reset_after_fork()
    with FakeOpenAI() as endpoint:
        settings.ATRIUM_EMBEDDER = "openai"
        settings.ATRIUM_EMBEDDINGS_BASE_URL = endpoint.base_url
        yield endpoint
    embeddings.reset_after_fork()
    embeddings._state.error = ""


def test_a_tool_call_over_the_time_limit_is_a_tool_error_that_says_so(
    tokens: dict[str, str], settings: Any, slow_embeddings: FakeOpenAI, fresh_threads: None
) -> None:
    settings.ATRIUM_MCP_THREADS = 1
    settings.ATRIUM_MCP_TOOL_TIMEOUT = 10
    slow_embeddings.script_embeddings([slow(1.0)])
    within = run(call(tokens["alice"], "memory_search", {"query": "which port does billing use"}))
    assert not within.is_error  # positive control: a slow call inside the limit answers

    settings.ATRIUM_MCP_TOOL_TIMEOUT = 0.3
    slow_embeddings.script_embeddings([slow(1.5)])
    over = run(call(tokens["alice"], "memory_search", {"query": "where does the nightly backup go"}))
    assert over.is_error
    message = text_of(over)
    assert "memory_search did not finish within the time limit of 0.3 s" in message
    assert "ATRIUM_MCP_TOOL_TIMEOUT" in message
    # The only database thread is still busy with the abandoned search; the next call waits for it, then answers.
    after = run(call(tokens["alice"], "memory_stats", {}))
    assert not after.is_error
