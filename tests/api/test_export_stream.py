"""Streamed exports (ops/portability/streaming.py, api/routers/export.py; issue 24, "Medium 5"): a REST download is
a streaming response read page by page, byte for byte the document the command builds whole, complete enough to
import again, with another member's private handoff left out; under ASGI each chunk is sent before the next is read."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import time_machine
from asgiref.sync import async_to_sync
from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client

from memory.models import Memory
from memory.text import redact
from ops.portability import export_document, export_stream, link_token
from ops.portability import exporting as exporting_module
from ops.portability import streaming as streaming_module
from palace.models import Palace
from tests.conftest import PROJECT_ORIGIN
from tests.ops.portability.world import build_world

URL = "/api/v1/export"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
COPY_ORIGIN = "https://github.com/atrium-test/copy.git"


def _save_handoff(client: Client, doing: str, *, expected: int) -> None:
    body = {"project": PROJECT_ORIGIN, "expected_version": expected, "doing": doing, "next_steps": ["ship it"]}
    response = client.put("/api/v1/handoff", json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content


def _whole(user: Any, *, redacted: bool = False) -> bytes:
    """The document as the command and MCP build it, in memory: what a streamed download must equal."""
    document = export_document(user=user, project=PROJECT_ORIGIN, redacted=redacted, now=NOW)
    return json.dumps(document, ensure_ascii=False, indent=1).encode()


def test_a_rest_export_streams_the_whole_document_without_another_members_handoff(
    project: Palace,
    alice: Any,
    bob: Any,
    bob_editor: Any,
    client_for: Any,
    token_for: Any,
    bearer: Any,
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(exporting_module, "PAGE_ROWS", 2)  # every section spans several pages of the cursor
    build_world(alice, project)
    _save_handoff(client_for(alice), "alice: rotating the staging keys", expected=1)  # the world holds version 1
    _save_handoff(client_for(bob), "bob: the billing migration", expected=0)
    for user, own, other in ((alice, "alice", "bob"), (bob, "bob", "alice")):
        with time_machine.travel(NOW, tick=False):
            response = Client().get(URL, {"project": PROJECT_ORIGIN}, **bearer(token_for(user)))
        assert response.status_code == 200 and response.streaming
        body = b"".join(response.streaming_content)
        assert body == _whole(user)  # byte for byte the document built whole
        (section,) = json.loads(body)["palaces"]
        handoffs = section["handoffs"]
        assert {h["user"] for h in handoffs} == {own}, (user, handoffs)  # their own handoff only …
        assert f"{own}: " in handoffs[-1]["doing"]  # … with its latest version (the control)
        assert f'"{other}: ' not in body.decode()  # … and nothing of the other member's
        assert len(section["memories"]) == Memory.objects.filter(palace=project).count() == 4
    with time_machine.travel(NOW, tick=False):
        redacted = Client().get(URL, {"project": PROJECT_ORIGIN, "redacted": "true"}, **bearer(token_for(alice)))
    assert redacted.streaming and b"".join(redacted.streaming_content) == _whole(alice, redacted=True)


def test_a_streamed_export_imports_again_into_a_new_project(
    project: Palace, alice: Any, token_for: Any, bearer: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(exporting_module, "PAGE_ROWS", 3)
    build_world(alice, project)
    link = link_token(user=alice, fmt="json", project=PROJECT_ORIGIN, redacted=False)
    download = Client().get(f"{URL}/download?token={quote(link)}")
    assert download.status_code == 200 and download.streaming
    document = json.loads(b"".join(download.streaming_content))
    url = f"/api/v1/import?project={quote(COPY_ORIGIN)}"
    answer = Client().post(url, document, content_type="application/json", **bearer(token_for(alice)))
    assert answer.status_code == 200, answer.content
    (result,) = answer.json()["palaces"]
    assert result["mode"] == "lossless" and result["counts"]["memories"] == 4
    copy = Palace.objects.get(origin_key="github.com/atrium-test/copy")
    fields = ("content", "status", "version", "supersedes__content")
    originals = Memory.objects.filter(palace=project).order_by("pk").values_list(*fields)
    copies = Memory.objects.filter(palace=copy).order_by("pk").values_list(*fields)
    # The import redacts what it stores (the world holds secrets an older server kept): the rest is as it was.
    assert list(copies) == [tuple(redact(v).text if isinstance(v, str) else v for v in row) for row in originals]


def test_under_asgi_each_chunk_is_sent_before_the_next_is_read(
    project: Palace, alice: Any, token_for: Any, monkeypatch: Any, recwarn: Any
) -> None:
    """Django's ASGI handler collects a plain StreamingHttpResponse's synchronous iterator whole before sending it;
    the export's response pulls one chunk at a time. Counted at the source: when the first chunk goes out, one chunk
    has been made."""
    build_world(alice, project)
    monkeypatch.setattr(streaming_module, "CHUNK_BYTES", 1024)  # the world's vectors alone make many chunks
    made: list[int] = []
    real = streaming_module.in_chunks

    def counting(parts: Any) -> Any:
        for chunk in real(parts):
            made.append(len(chunk))
            yield chunk

    monkeypatch.setattr(streaming_module, "in_chunks", counting)
    made_when_sent: list[int] = []
    body = bytearray()
    status: list[int] = []

    received: list[str] = []

    async def receive() -> dict[str, Any]:
        if not received:
            received.append("body")
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # the client stays connected until the response is done
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        elif message.get("body"):
            made_when_sent.append(len(made))
            body.extend(message["body"])

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": URL,
        "raw_path": URL.encode(),
        "query_string": f"project={quote(PROJECT_ORIGIN)}".encode(),
        "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {token_for(alice)}".encode())],
        "client": ("127.0.0.1", 40000),
        "server": ("testserver", 80),
    }
    # As Django's test client does: the request must not close the test's connection (its transaction holds the data).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        async_to_sync(ASGIHandler())(scope, receive, send)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    assert status == [200]
    assert len(made) > 3 and made_when_sent[0] == 1  # sent as made, not collected first
    assert made_when_sent == sorted(made_when_sent)
    (section,) = json.loads(bytes(body))["palaces"]  # and the document is complete
    assert len(section["memories"]) == 4
    assert not [w for w in recwarn if "consume synchronous iterators" in str(w.message)]


def test_which_palaces_are_checked_before_the_first_byte(project: Palace, alice: Any, charlie: Any) -> None:
    """An outsider's export of a project fails when it is asked for (a 404 at the door), not part-way through a
    download; the owner's (the control) is a stream."""
    from palace.errors import NotFound

    build_world(alice, project)
    stream = export_stream(user=alice, fmt="json", project=PROJECT_ORIGIN, redacted=False)
    assert json.loads(b"".join(stream.chunks))["palaces"][0]["origin"] == project.origin_key
    try:
        export_stream(user=charlie, fmt="json", project=PROJECT_ORIGIN, redacted=False)
    except NotFound:
        pass
    else:
        raise AssertionError("an outsider's export of the project was not refused")
