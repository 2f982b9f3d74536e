"""The ASGI application: Django (http), Channels (websockets) and the MCP endpoint on one server (uvicorn).

The MCP SDK's session manager needs an ASGI lifespan; uvicorn sends one, and for servers that do not the manager
is started lazily on the first MCP request. MCP requests run their ORM work on a small pool of long-lived threads
that keep their database connections (api/mcp/workers.py) and answer with a `Server-Timing` header
(api/mcp/timing.py). A request's body is read whole, bounded in size and time, before it takes one of those threads
(api/mcp/body.py), so a slow client holds none.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
from config.prepare import prepare_process

prepare_process()  # a bad configuration stops the server; the embedded PostgreSQL is started or joined
django_app = get_asgi_application()  # before anything that imports models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import InterfaceError, OperationalError  # noqa: E402

from api.mcp.body import BodyRefused, ClientGone, read_body, refuse, replay  # noqa: E402
from api.mcp.server import build_mcp_app, mcp  # noqa: E402
from api.mcp.timing import HEADER, RequestTiming, current_timing  # noqa: E402
from api.mcp.workers import OrmWorkers  # noqa: E402
from config.bodylimit import BodyLimit, BodyRule  # noqa: E402
from config.middleware import DATABASE_DOWN_MESSAGE, RETRY_AFTER_SECONDS  # noqa: E402
from memory.providers import embedder_warm  # noqa: E402
from panel.origin import SameOriginValidator  # noqa: E402
from panel.routing import websocket_urlpatterns  # noqa: E402

logger = logging.getLogger(__name__)
mcp_app = build_mcp_app()
MCP_PATHS = {"/mcp", "/mcp/"}
IMPORT_PATHS = {"/api/v1/import", "/api/v1/import/"}
# Transcript uploads (the Backfill doors: REST and the panel's view) carry whole session files or archives.
UPLOAD_PATHS = {
    "/api/v1/backfill/estimate",
    "/api/v1/backfill/runs",
    "/backfill/estimate/",
    "/backfill/run/",
}
websocket_app = SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))

Scope = dict[str, Any]


class McpLifecycle:
    """Runs `mcp.session_manager.run()` and the MCP ORM threads for the life of the process (once per event loop)."""

    def __init__(self) -> None:
        self._started_loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self.workers: OrmWorkers | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        if self._started_loop is loop:
            return
        if self._lock is None or self._started_loop is not None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._started_loop is loop:
                return
            # A new event loop (tests run one per test): the previous loop's threads end with their connections.
            self.close_workers()
            self.open_workers()
            ready = asyncio.Event()
            self._stop = asyncio.Event()
            stop = self._stop

            async def runner() -> None:
                # A fresh manager per event loop: the SDK's manager can run only once.
                build_mcp_app_for_loop()
                async with mcp.session_manager.run():
                    ready.set()
                    await stop.wait()

            self._task = loop.create_task(runner())
            await ready.wait()
            self._started_loop = loop

    async def stop(self) -> None:
        if self._task is not None and self._stop is not None:
            self._stop.set()
            await self._task
            self._task = None
            self._started_loop = None
        self.close_workers()

    def open_workers(self) -> OrmWorkers:
        self.workers = OrmWorkers(size=settings.ATRIUM_MCP_THREADS, max_age=settings.ATRIUM_MCP_DB_CONN_MAX_AGE)
        return self.workers

    def close_workers(self) -> None:
        """End the ORM threads, closing their database connections (blocks until they are closed)."""
        if self.workers is not None:
            self.workers.close()
            self.workers = None


def build_mcp_app_for_loop() -> None:
    global mcp_app
    mcp_app = build_mcp_app()


lifecycle = McpLifecycle()


async def _mcp(scope: Scope, receive: Any, send: Any) -> None:
    timing = RequestTiming(started=time.perf_counter())
    reset = current_timing.set(timing)
    try:
        await _mcp_timed(timing, scope, receive, send)
    finally:
        current_timing.reset(reset)


async def _mcp_timed(timing: RequestTiming, scope: Scope, receive: Any, send: Any) -> None:
    await lifecycle.start()
    try:
        body = await read_body(
            scope, receive, limit=settings.ATRIUM_MCP_MAX_BODY_BYTES, timeout=settings.ATRIUM_MCP_BODY_TIMEOUT
        )
    except BodyRefused as refused:
        await refuse(send, refused)
        return
    except ClientGone:
        return
    receive = replay(body, receive)
    workers = lifecycle.workers or lifecycle.open_workers()
    scope = dict(scope, path="/mcp", raw_path=b"/mcp")

    async def send_timed(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = dict(message, headers=[*message.get("headers", []), (HEADER, timing.header())])
        await send(message)

    # Django's request signals never fire on this path: the request holds one ORM thread for its whole life (else
    # all MCP ORM work shares one thread), whose connection is checked before and after it (api/mcp/workers.py).
    async with workers.request() as wait_ms:
        timing.wait_ms = wait_ms
        await _database_guarded(mcp_app, scope, receive, send_timed)


async def _database_guarded(app: Any, scope: Scope, receive: Any, send: Any) -> None:
    """Answer 503 with a JSON-RPC error body when the database is unreachable (PostgreSQL restarting), as
    config.middleware does for Django's pages. The SDK's app turns an exception into a 500 and then re-raises it, so
    a 5xx response is held back until the app has returned: a database error replaces it."""
    held: list[dict[str, Any]] = []
    passed: list[str] = []  # the types of the messages already sent on

    async def hold_5xx(message: dict[str, Any]) -> None:
        if held or (message["type"] == "http.response.start" and message["status"] >= 500):
            held.append(message)
        else:
            passed.append(message["type"])
            await send(message)

    try:
        await app(scope, receive, hold_5xx)
    except (OperationalError, InterfaceError) as exc:
        if "http.response.start" in passed:
            raise  # a response is on its way already: nothing better to say
        logger.warning("database unavailable on MCP request: %s", exc)
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": DATABASE_DOWN_MESSAGE}})
        headers = [
            (b"content-type", b"application/json"),
            (b"retry-after", RETRY_AFTER_SECONDS.encode()),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body.encode()})
        return
    for message in held:
        await send(message)


def body_rule(scope: Scope) -> BodyRule:
    """How large a request's body may be, and how long it may take to arrive (config/bodylimit.py)."""
    path = scope["path"]
    if path in MCP_PATHS:
        return BodyRule(
            settings.ATRIUM_MCP_MAX_BODY_BYTES,
            "ATRIUM_MCP_MAX_BODY_BYTES",
            settings.ATRIUM_MCP_BODY_TIMEOUT,
            "ATRIUM_MCP_BODY_TIMEOUT",
            json_rpc=True,
        )
    if path in IMPORT_PATHS and scope["method"] == "POST":
        limit, name = settings.ATRIUM_MAX_IMPORT_BYTES, "ATRIUM_MAX_IMPORT_BYTES"
    elif path in UPLOAD_PATHS and scope["method"] == "POST":
        limit, name = settings.ATRIUM_MAX_UPLOAD_BYTES, "ATRIUM_MAX_UPLOAD_BYTES"
    else:
        limit, name = settings.ATRIUM_MAX_BODY_BYTES, "ATRIUM_MAX_BODY_BYTES"
    return BodyRule(limit, name, settings.ATRIUM_BODY_TIMEOUT, "ATRIUM_BODY_TIMEOUT")


WARM_JOIN_SECONDS = 30  # how long a stop waits for an embedder load begun at start-up


async def dispatch(scope: Scope, receive: Any, send: Any) -> None:
    kind = scope["type"]
    if kind == "lifespan":
        warming = None
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await lifecycle.start()
                warming = embedder_warm()  # in a thread: the server answers while it loads (health says `loading`)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await lifecycle.stop()
                if warming is not None:  # a load still running would finish after the process thinks it stopped
                    await asyncio.to_thread(warming.join, WARM_JOIN_SECONDS)
                await send({"type": "lifespan.shutdown.complete"})
                return
    elif kind == "http" and scope["path"] in MCP_PATHS:
        await _mcp(scope, receive, send)
    elif kind == "websocket":
        await websocket_app(scope, receive, send)
    else:
        await django_app(scope, receive, send)


# Every HTTP body passes one bounded reader before Django or the MCP endpoint sees it (config/bodylimit.py).
application = BodyLimit(dispatch, body_rule)
