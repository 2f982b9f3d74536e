"""The MCP endpoint's ORM threads: a few long-lived threads, each keeping its own database connection.

Django ties a connection to a thread and closes it at the end of a request through its request signals, which never
fire on the MCP path; under ASGI each request also gets a fresh thread (`ThreadSensitiveContext()`), so a connection
could never outlive its request and every MCP request paid for a new PostgreSQL connection (5–10 ms measured on the
2-core dev machine). Instead, each MCP request checks out one of these threads for its whole life:

- every thread-sensitive `sync_to_async` call of the request (token verification, the tool body) runs on that thread,
  and no other request uses the thread at the same time (`ThreadSensitiveContext(executor=...)`);
- the thread keeps its connection between requests for `ATRIUM_MCP_DB_CONN_MAX_AGE` seconds (0 = a new connection
  per request). Before a request's first query and after its last, the connection is checked as Django does at the
  start and end of a request (`close_old_connections`: closed when past its age, when autocommit was left off, or
  when an error made it unusable) — queued on the thread itself, so the request does not wait for an extra hop.
  Django's health check (one more round trip per request) is replaced by retrying the request's first query, the
  token check, once on a new connection;
- at most `ATRIUM_MCP_THREADS` threads, and so connections; a request beyond that waits for a free thread, first
  come first served (the wait is reported in the `Server-Timing` header as `wait`);
- `close()` closes every thread's connection on its own thread and ends the threads;
- a request that stops waiting for work still running on its thread (a tool call over ATRIUM_MCP_TOOL_TIMEOUT,
  api/mcp/runner.py) calls `abandon_thread()`: the thread returns to the pool only when that work has ended, so the
  next request neither queues silently behind it nor gets a connection in use.

One pool serves one event loop (the ASGI lifespan or the lazy start in config/asgi.py builds it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass

from asgiref.sync import ThreadSensitiveContext
from django.db import close_old_connections, connections

from palace import rls

log = logging.getLogger("atrium.mcp")


def _init_thread(max_age: int) -> None:
    """Runs once on a new ORM thread: its connections live `max_age` seconds, without Django's health check (a
    `SELECT 1` round trip before each request's first query). Instead the first query of every MCP request, the
    token check, is retried once on a new connection when the kept one turned out to be dead
    (api/mcp/server.py). Only this thread's copy of the settings changes; Django's own request threads keep theirs.
    """
    for alias in connections:
        conn = connections[alias]
        conn.settings_dict = {**conn.settings_dict, "CONN_MAX_AGE": max_age, "CONN_HEALTH_CHECKS": False}


def _check_connections() -> None:
    try:
        rls.reset()  # a context never outlives its call (runner.py restores it; this makes sure)
        close_old_connections()
    except Exception:  # a failing close must not take the thread's next request with it
        log.exception("closing an MCP database connection failed")


def _close_connections() -> None:
    for conn in connections.all(initialized_only=True):
        with contextlib.suppress(Exception):
            conn.close()


@dataclass
class _Hold:
    abandoned: bool = False


# The ORM thread hold of the MCP request being served (tool handlers run in copies of its context: same object).
_current_hold: ContextVar[_Hold | None] = ContextVar("atrium_mcp_orm_hold", default=None)


def abandon_thread() -> None:
    """This request no longer waits for the work it left running on its ORM thread (see the module docstring)."""
    hold = _current_hold.get()
    if hold is not None:
        hold.abandoned = True


def _end(executor: ThreadPoolExecutor) -> None:
    """Close the thread's connections on the thread itself, then let it end."""
    executor.submit(_close_connections)
    executor.shutdown(wait=False)


def _log_failure(future: Future[None]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("MCP connection check failed: %s", future.exception())


class OrmWorkers:
    """A pool of single-thread executors; `async with pool.request() as wait_ms:` runs the block on one of them."""

    def __init__(self, *, size: int, max_age: int) -> None:
        self.size = size
        self.max_age = max_age
        self._threads: list[ThreadPoolExecutor] = []
        self._idle: list[ThreadPoolExecutor] = []  # LIFO: the busiest threads keep warm connections
        self._waiters: deque[asyncio.Future[ThreadPoolExecutor]] = deque()
        self._closed = False

    @property
    def threads(self) -> int:
        return len(self._threads)

    @property
    def idle(self) -> int:
        return len(self._idle)

    def _new(self) -> ThreadPoolExecutor:
        executor = ThreadPoolExecutor(
            max_workers=1,
            thread_name_prefix=f"atrium-mcp-orm-{len(self._threads)}",
            initializer=_init_thread,
            initargs=(self.max_age,),
        )
        self._threads.append(executor)
        return executor

    async def _acquire(self) -> ThreadPoolExecutor:
        if self._closed:
            raise RuntimeError("the MCP ORM threads are closed")
        if self._idle:
            return self._idle.pop()
        if len(self._threads) < self.size:
            return self._new()
        waiter: asyncio.Future[ThreadPoolExecutor] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release(waiter.result())  # handed over just as the request was cancelled
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise

    def _release(self, executor: ThreadPoolExecutor) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(executor)
                return
        self._idle.append(executor)

    @contextlib.asynccontextmanager
    async def request(self) -> AsyncIterator[float]:
        """Hold one ORM thread for the block; yields the milliseconds spent waiting for it."""
        started = time.perf_counter()
        executor = await self._acquire()
        wait_ms = (time.perf_counter() - started) * 1000
        # Queued ahead of the request's own work on the same single thread: no extra await.
        executor.submit(_check_connections).add_done_callback(_log_failure)
        hold = _Hold()
        reset = _current_hold.set(hold)
        try:
            async with ThreadSensitiveContext(executor=executor):
                yield wait_ms
        finally:
            _current_hold.reset(reset)
            # Queued behind the request's work, ahead of the next request's.
            checked = executor.submit(_check_connections)
            checked.add_done_callback(_log_failure)
            if hold.abandoned:  # its work still runs: back to the pool once the check behind it has run
                loop = asyncio.get_running_loop()
                checked.add_done_callback(lambda _: self._return_from_thread(loop, executor))
            else:
                self._return(executor)

    def _return(self, executor: ThreadPoolExecutor) -> None:
        if self._closed:
            _end(executor)
        else:
            self._release(executor)

    def _return_from_thread(self, loop: asyncio.AbstractEventLoop, executor: ThreadPoolExecutor) -> None:
        try:
            loop.call_soon_threadsafe(self._return, executor)
        except RuntimeError:  # the pool's event loop has ended (and the pool with it): end the thread
            _end(executor)

    def close(self) -> None:
        """Close every thread's connections (each on its own thread) and end the threads. Blocks until done."""
        self._closed = True
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(RuntimeError("the MCP ORM threads are closed"))
        self._waiters.clear()
        idle = set(self._idle)
        for executor in self._threads:
            if executor in idle:
                executor.submit(_close_connections)
                executor.shutdown(wait=True)
        self._idle.clear()
        self._threads.clear()
