"""Issue 26: memory_export's link carries the port the server is actually on (it printed 127.0.0.1:8000 whatever
served): uvicorn on a free port, the official client over real HTTP, and the link downloaded from that server."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from palace.models import Palace
from tests.conftest import PROJECT_ORIGIN
from tests.ops.portability.world import build_world


async def _export(url: str, token: str) -> Any:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,  # type: ignore[arg-type]
    ):
        return await client.call_tool("memory_export", {"project": PROJECT_ORIGIN, "format": "json"})


def test_export_link_on_a_server_off_port_8000_carries_that_port(
    asgi_server: str, alice: Any, project: Palace, token_for: Any, settings: Any, monkeypatch: Any
) -> None:
    from api.mcp.tools import export as export_tool

    settings.ATRIUM_PUBLIC_URL = ""
    monkeypatch.setattr(export_tool, "INLINE_BYTES", 10)  # a link instead of the document inline
    build_world(alice, project)
    port = urlsplit(asgi_server).port
    assert port is not None and port != 8000  # the fixture's free port: not the default

    result = asyncio.run(_export(f"{asgi_server}/mcp", token_for(alice)))
    assert not result.is_error, result
    link = result.structured_content["url"]
    assert link.startswith(f"{asgi_server}/api/v1/export/download?token="), link
    with urllib.request.urlopen(link, timeout=30) as response:  # the link works on the server that made it
        document = json.loads(response.read())
    assert [p["origin"] for p in document["palaces"]] == [project.origin_key]
