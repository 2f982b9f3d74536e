"""The ASGI application: Django (http), Channels (websockets) and the MCP endpoint on one server (uvicorn).

The MCP SDK's session manager needs an ASGI lifespan; uvicorn sends one, and for servers that do not the manager
is started lazily on the first MCP request.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_app = get_asgi_application()  # before anything that imports models

from asgiref.sync import ThreadSensitiveContext, sync_to_async  # noqa: E402
from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.db import close_old_connections  # noqa: E402

from api.mcp.server import build_mcp_app, mcp  # noqa: E402
from panel.routing import websocket_urlpatterns  # noqa: E402

mcp_app = build_mcp_app()
MCP_PATHS = {"/mcp", "/mcp/"}
websocket_app = AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))

Scope = dict[str, Any]


class McpLifecycle:
    """Runs `mcp.session_manager.run()` for the life of the process (once per event loop)."""

    def __init__(self) -> None:
        self._started_loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        if self._started_loop is loop:
            return
        if self._lock is None or self._started_loop is not None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._started_loop is loop:
                return
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


def build_mcp_app_for_loop() -> None:
    global mcp_app
    mcp_app = build_mcp_app()


lifecycle = McpLifecycle()


async def _mcp(scope: Scope, receive: Any, send: Any) -> None:
    await lifecycle.start()
    scope = dict(scope, path="/mcp", raw_path=b"/mcp")
    # Django's request signals never fire on this path: give each request its own ORM thread (else all MCP ORM
    # work shares one) and close its connection afterwards on that same thread.
    async with ThreadSensitiveContext():
        await sync_to_async(close_old_connections)()
        try:
            await mcp_app(scope, receive, send)
        finally:
            await sync_to_async(close_old_connections)()


async def application(scope: Scope, receive: Any, send: Any) -> None:
    kind = scope["type"]
    if kind == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await lifecycle.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await lifecycle.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return
    elif kind == "http" and scope["path"] in MCP_PATHS:
        await _mcp(scope, receive, send)
    elif kind == "websocket":
        await websocket_app(scope, receive, send)
    else:
        await django_app(scope, receive, send)
