"""The MCP endpoint's ORM threads (api/mcp/workers.py): connections kept between requests but checked like Django
does at request boundaries, one request per thread at a time, bounded, and closed on shutdown."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.db.backends.signals import connection_created

from api.mcp.workers import OrmWorkers
from ops.bench import parse_server_timing
from tests.api.mcp.conftest import call, mcp_client, raw_post, run

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_stats", "arguments": {}}}


@pytest.fixture
def opened() -> Iterator[list[str]]:
    """Names of the threads that opened a database connection while the test ran."""
    names: list[str] = []

    def count(sender: Any, connection: Any, **kwargs: Any) -> None:
        names.append(threading.current_thread().name)

    connection_created.connect(count, weak=False)
    try:
        yield names
    finally:
        connection_created.disconnect(count)


@pytest.fixture
def fresh_threads() -> Iterator[None]:
    """Make the next MCP request build its ORM threads from the current settings."""
    from config.asgi import lifecycle

    lifecycle.close_workers()
    yield
    lifecycle.close_workers()


def _pid() -> tuple[str, int, bool]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    return threading.current_thread().name, pid, connection.get_autocommit()


def _leave_autocommit_off() -> None:
    """A request that forgot to restore autocommit (runs on the ORM thread: the proxy resolves per thread)."""
    connection.set_autocommit(False)


async def _sequential_calls(token: str, n: int) -> None:
    async with mcp_client(token) as client:
        for _ in range(n):
            result = await client.call_tool("memory_stats", {})
            assert not result.is_error


def test_mcp_requests_reuse_one_connection(tokens: dict[str, str], opened: list[str], fresh_threads: None) -> None:
    run(_sequential_calls(tokens["alice"], 4))
    mcp_opened = [name for name in opened if name.startswith("atrium-mcp-orm")]
    assert len(mcp_opened) == 1, opened


def test_max_age_zero_opens_a_connection_per_request(
    tokens: dict[str, str], opened: list[str], settings: Any, fresh_threads: None
) -> None:
    settings.ATRIUM_MCP_DB_CONN_MAX_AGE = 0
    run(_sequential_calls(tokens["alice"], 3))
    # tools/list and three tools/call requests, each with a connection of its own.
    assert len([name for name in opened if name.startswith("atrium-mcp-orm")]) >= 3


def test_concurrent_requests_beyond_the_pool_wait_and_stay_isolated(
    tokens: dict[str, str], settings: Any, fresh_threads: None
) -> None:
    """One ORM thread, alice and charlie at once: every request answered for its own caller; some waited."""
    settings.ATRIUM_MCP_THREADS = 1
    note = "The on-call rotation for the payments service switches every Tuesday at 09:00."
    saved = call_sync_save(tokens["alice"], note)
    assert not saved.is_error

    async def both() -> list[tuple[str, Any, dict[str, float]]]:
        async def one(who: str) -> tuple[str, Any, dict[str, float]]:
            response = await raw_post(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "memory_search", "arguments": {"query": "on-call rotation payments"}},
                },
                token=tokens[who],
            )
            return who, response.json(), parse_server_timing(response.headers.get("server-timing"))

        return await asyncio.gather(*(one(who) for who in ["alice", "charlie"] * 3))

    answers = run(both())
    for who, body, _timing in answers:
        hits = body["result"]["structuredContent"]["hits"]
        if who == "alice":
            assert hits and hits[0]["id"] == saved.structured_content["items"][0]["id"]
        else:
            assert hits == []
    assert max(timing["wait"] for _, _, timing in answers) > 0


def call_sync_save(token: str, content: str) -> Any:
    return run(call(token, "memory_save", {"content": content, "kind": "fact"}))


def test_a_thread_is_held_by_one_request_at_a_time_and_reused(transactional_db: Any) -> None:
    async def scenario() -> tuple[list[str], list[str]]:
        pool = OrmWorkers(size=2, max_age=300)
        try:
            sequential = []
            for _ in range(3):
                async with pool.request():
                    sequential.append((await sync_to_async(_pid)())[0])

            inside: list[str] = []
            both_inside, gate = asyncio.Event(), asyncio.Event()

            async def held() -> None:
                async with pool.request():
                    inside.append((await sync_to_async(_pid)())[0])
                    if len(inside) == 2:
                        both_inside.set()
                    await gate.wait()
                    # Every thread-sensitive call of this request stays on its thread.
                    inside.append((await sync_to_async(_pid)())[0])

            first, second = asyncio.create_task(held()), asyncio.create_task(held())
            # Both requests hold a thread at once before either goes on (an event, not a guess at how long it takes).
            await asyncio.wait_for(both_inside.wait(), timeout=60)
            gate.set()
            await asyncio.gather(first, second)
            return sequential, inside
        finally:
            await asyncio.get_running_loop().run_in_executor(None, pool.close)

    sequential, inside = run(scenario())
    assert len(set(sequential)) == 1  # LIFO: the warm thread again
    assert len(set(inside)) == 2  # two requests at once, two threads
    assert sorted(inside) == sorted(inside[:2] * 2)


def test_a_connection_left_dirty_is_not_handed_to_the_next_request(transactional_db: Any) -> None:
    async def scenario() -> tuple[int, int, bool]:
        pool = OrmWorkers(size=1, max_age=300)
        try:
            async with pool.request():
                _, first, _ = await sync_to_async(_pid)()
                await sync_to_async(_leave_autocommit_off)()
            async with pool.request():
                _, second, autocommit = await sync_to_async(_pid)()
            return first, second, autocommit
        finally:
            await asyncio.get_running_loop().run_in_executor(None, pool.close)

    first, second, autocommit = run(scenario())
    assert first != second and autocommit


def test_connections_past_their_age_are_replaced(transactional_db: Any) -> None:
    async def scenario() -> tuple[int, int]:
        pool = OrmWorkers(size=1, max_age=0)
        try:
            async with pool.request():
                _, first, _ = await sync_to_async(_pid)()
            async with pool.request():
                _, second, _ = await sync_to_async(_pid)()
            return first, second
        finally:
            await asyncio.get_running_loop().run_in_executor(None, pool.close)

    first, second = run(scenario())
    assert first != second


def test_close_ends_the_threads_and_their_connections(transactional_db: Any) -> None:
    async def scenario() -> tuple[OrmWorkers, list[int]]:
        pool = OrmWorkers(size=2, max_age=300)
        pids = []
        for _ in range(2):
            async with pool.request():
                pids.append((await sync_to_async(_pid)())[1])
        await asyncio.get_running_loop().run_in_executor(None, pool.close)
        return pool, pids

    pool, pids = run(scenario())
    assert pool.threads == 0 and pool.idle == 0
    deadline = time.monotonic() + 5
    while True:  # a closed session leaves pg_stat_activity a moment after the client hangs up
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", [pids])
            left = cursor.fetchone()[0]
        if left == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert left == 0
    assert not any(t.name.startswith("atrium-mcp-orm") and t.is_alive() for t in threading.enumerate())

    async def refused() -> None:
        async with pool.request():
            pass

    with pytest.raises(RuntimeError, match="closed"):
        run(refused())


def _terminate_other_backends(spare: int) -> int:
    """What a database restart or an idle timeout does to a kept connection (on a thread of its own)."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND pid <> %s AND backend_type = 'client backend'",
                [spare],
            )
            return int(cursor.fetchone()[0])
    finally:
        connection.close()


def test_a_kept_connection_the_database_dropped_is_replaced_without_an_error(
    tokens: dict[str, str], opened: list[str], fresh_threads: None
) -> None:
    """No health-check round trip per request: the token check (every request's first query) retries once."""
    test_pid = _pid()[1]  # the test's own connection survives

    async def scenario() -> int:
        async with mcp_client(tokens["alice"]) as client:
            assert not (await client.call_tool("memory_stats", {})).is_error
            terminated = await sync_to_async(_terminate_other_backends, thread_sensitive=False)(test_pid)
            opened.clear()
            for _ in range(2):
                assert not (await client.call_tool("memory_stats", {})).is_error
            return terminated

    assert run(scenario()) >= 1
    assert len([name for name in opened if name.startswith("atrium-mcp-orm")]) == 1
