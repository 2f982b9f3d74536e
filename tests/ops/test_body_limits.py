"""The bounded body reader (config/bodylimit.py) at the ASGI level: which limit each path gets, the 408 for a
body that does not arrive, and that the application is told the client went away (real server: the _server module)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from django.test import override_settings

from config.bodylimit import BodyLimit, BodyRule

RULE = BodyRule(1000, "ATRIUM_MAX_BODY_BYTES", 0.2, "ATRIUM_BODY_TIMEOUT")


def _scope(path: str = "/healthz", *, length: int | None = None, method: str = "POST") -> dict[str, Any]:
    headers = [] if length is None else [(b"content-length", str(length).encode())]
    return {"type": "http", "path": path, "method": method, "headers": headers}


async def _run(scope: dict[str, Any], messages: list[dict[str, Any]], *, hang: bool = False) -> tuple[list, list]:
    """Run a reading app behind BodyLimit; returns (what was sent to the client, what the app received)."""
    sent: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        if queue:
            return queue.pop(0)
        if hang:
            await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            seen.append(message)
            if message["type"] == "http.disconnect":
                return
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    await BodyLimit(app, lambda scope: RULE)(scope, receive, send)
    return sent, seen


def _chunk(n: int, more: bool = True) -> dict[str, Any]:
    return {"type": "http.request", "body": b"x" * n, "more_body": more}


def test_announced_length_above_the_limit_is_refused_before_the_app_runs() -> None:
    sent, seen = asyncio.run(_run(_scope(length=1001), [_chunk(10, False)]))
    assert sent[0]["status"] == 413 and (b"connection", b"close") in sent[0]["headers"]
    assert "larger than 1000 bytes (ATRIUM_MAX_BODY_BYTES)" in json.loads(sent[1]["body"])["detail"]
    assert seen == []  # the app never ran
    # Positive control: at the limit, the app reads the body and answers.
    sent, seen = asyncio.run(_run(_scope(length=1000), [_chunk(1000, False)]))
    assert sent[0]["status"] == 200 and len(seen) == 1


def test_a_stream_past_the_limit_is_cut_off_and_the_app_sees_a_disconnect() -> None:
    sent, seen = asyncio.run(_run(_scope(), [_chunk(600), _chunk(600), _chunk(600, False)]))
    assert [m.get("status") for m in sent if m["type"] == "http.response.start"] == [413]
    assert [m["type"] for m in seen] == ["http.request", "http.disconnect"]  # the third chunk was never asked for
    sent, seen = asyncio.run(_run(_scope(), [_chunk(600), _chunk(400, False)]))
    assert sent[0]["status"] == 200 and len(seen) == 2


def test_a_body_that_does_not_arrive_in_time_is_answered_408() -> None:
    sent, seen = asyncio.run(_run(_scope(), [_chunk(10)], hang=True))
    assert sent[0]["status"] == 408
    assert "ATRIUM_BODY_TIMEOUT" in json.loads(sent[1]["body"])["detail"]
    assert seen[-1]["type"] == "http.disconnect"


@override_settings(ATRIUM_MAX_BODY_BYTES=2000, ATRIUM_MAX_IMPORT_BYTES=9000, ATRIUM_MCP_MAX_BODY_BYTES=5000)
def test_each_path_gets_its_limit() -> None:
    from config.asgi import body_rule

    assert body_rule(_scope("/healthz")).limit == 2000
    assert body_rule(_scope("/api/v1/memories")).limit == 2000
    assert body_rule(_scope("/api/v1/import")).limit == 9000
    assert body_rule(_scope("/api/v1/import", method="GET")).limit == 2000
    mcp = body_rule(_scope("/mcp"))
    assert (mcp.limit, mcp.setting, mcp.json_rpc) == (5000, "ATRIUM_MCP_MAX_BODY_BYTES", True)
