"""Once over real HTTP: `atrium up` (uvicorn with lifespan) on a free port in a temporary ATRIUM_HOME, the official
client in both eras, the 401 challenge on the wire, and the profile hook endpoint."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import api.mcp.tools  # noqa: F401  (registers every tool in TOOLS)
from api.mcp.registry import TOOLS
from ops.bench import local_server

pytestmark = pytest.mark.slow
FACTS = {
    "auto": ("The staging database lives on host kestrel-3 behind the VPN.", "where is the staging database"),
    "legacy": ("Release notes are drafted every Thursday afternoon by the docs team.", "who drafts release notes"),
}


async def _session(url: str, token: str, mode: str) -> tuple[str, set[str], Any, Any]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,  # type: ignore[arg-type]
    ):
        names = {t.name for t in (await client.list_tools()).tools}
        content, query = FACTS[mode]
        saved = await client.call_tool("memory_save", {"content": content, "kind": "fact"})
        found = await client.call_tool("memory_search", {"query": query})
        return client.protocol_version, names, saved, found


def test_official_client_over_a_real_uvicorn_started_by_atrium_up() -> None:
    with local_server(1) as (url, tokens):
        for mode, version in (("auto", "2026-07-28"), ("legacy", "2025-11-25")):
            got, names, saved, found = asyncio.run(_session(url, tokens[0], mode))
            assert got == version
            assert names == set(TOOLS) and "memory_restore" in names  # every registered tool, over the wire
            assert not saved.is_error and saved.structured_content["items"][0]["disposition"] == "accept"
            assert found.structured_content["hits"][0]["id"] == saved.structured_content["items"][0]["id"]

        request = urllib.request.Request(url, data=b"{}", method="POST", headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 401
        assert refused.value.headers["WWW-Authenticate"].startswith("Bearer")
        assert "total;dur=" in refused.value.headers["Server-Timing"]  # through uvicorn too

        base = url.removesuffix("/mcp")
        hook = urllib.request.Request(f"{base}/api/v1/profile.txt", headers={"Authorization": f"Bearer {tokens[0]}"})
        with urllib.request.urlopen(hook, timeout=10) as response:
            text = response.read().decode()
        assert text.startswith("<atrium_memory_context>") and "kestrel-3" in text
