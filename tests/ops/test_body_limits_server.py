"""The bounded body reader through a real `atrium up` (uvicorn): an anonymous client announcing or streaming a 50 MB
body is answered 413 before 4 MB of it is sent, while the server goes on answering others (issue 24, item 5)."""

from __future__ import annotations

import json
import select
import socket
import urllib.request
from urllib.parse import urlsplit

import pytest

from ops.bench.mcp import local_stack

pytestmark = pytest.mark.slow
CHUNK = 64 * 1024
ANNOUNCED = 50_000_000
BOUND = 4_000_000


class Upload:
    """A raw HTTP/1.1 upload: headers first, then the body a chunk at a time, until the server answers."""

    def __init__(self, base: str, path: str, *, chunked: bool) -> None:
        parts = urlsplit(base)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, CHUNK)
        self.chunked = chunked
        self.sent = 0
        framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {ANNOUNCED}"
        head = f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n{framing}\r\n\r\n"
        self.sock.sendall(head.encode())

    def push(self, until: int) -> bool:
        """Send body bytes until `until` have gone or the server has answered (True when it has)."""
        while self.sent < min(until, ANNOUNCED):
            readable, writable, _ = select.select([self.sock], [self.sock], [], 30)
            if readable:
                return True
            if not writable:
                raise AssertionError("the server neither reads the body nor answers")
            frame = b"x" * CHUNK
            if self.chunked:
                frame = f"{CHUNK:x}\r\n".encode() + frame + b"\r\n"
            try:
                self.sock.sendall(frame)
            except (BrokenPipeError, ConnectionResetError):
                return True
            self.sent += CHUNK
        return bool(select.select([self.sock], [], [], 0)[0])

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        data = b""
        while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < _length(data):
            piece = self.sock.recv(65536)
            if not piece:
                break
            data += piece
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        return int(lines[0].split()[1]), headers, body

    def close(self) -> None:
        self.sock.close()


def _length(data: bytes) -> int:
    head = data.partition(b"\r\n\r\n")[0].decode("latin-1").lower()
    for line in head.split("\r\n"):
        if line.startswith("content-length:"):
            return int(line.split(":", 1)[1])
    return 0


def _get(base: str, path: str) -> int:
    with urllib.request.urlopen(f"{base}{path}", timeout=30) as response:
        return int(response.status)


def test_large_bodies_are_refused_before_they_are_read_and_others_are_served_meanwhile() -> None:
    with local_stack(1, worker=False) as stack:
        base, token = stack.bases[0], stack.tokens[0]
        auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

        # Announced: refused on the headers alone.
        announced = Upload(base, "/healthz", chunked=False)
        assert announced.push(BOUND)
        status, headers, body = announced.answer()
        announced.close()
        assert status == 413 and headers["connection"] == "close"
        assert "ATRIUM_MAX_BODY_BYTES" in json.loads(body)["detail"]
        assert announced.sent < BOUND

        # Chunked: a first part under the limit is taken and the server answers others meanwhile.
        streamed = Upload(base, "/healthz", chunked=True)
        assert not streamed.push(512 * 1024)
        assert _get(base, "/healthz") == 200
        exported = urllib.request.Request(f"{base}/api/v1/export", headers=auth)
        with urllib.request.urlopen(exported, timeout=60) as response:
            document = response.read()
        # An import above the default limit but within ATRIUM_MAX_IMPORT_BYTES is taken (JSON whitespace pads it).
        padded = document + b" " * 1_500_000
        upload = urllib.request.Request(f"{base}/api/v1/import", data=padded, headers=auth, method="POST")
        with urllib.request.urlopen(upload, timeout=60) as response:
            assert response.status == 200
            report = json.loads(response.read())
        assert [p["mode"] for p in report["palaces"]] == ["lossless"] and report["palaces"][0]["oplog_id"]
        # Then the stream passes the limit and is cut off there.
        assert streamed.push(BOUND)
        status, headers, body = streamed.answer()
        streamed.close()
        assert status == 413 and "ATRIUM_MAX_BODY_BYTES" in json.loads(body)["detail"]
        assert streamed.sent < BOUND

        # The same padded document on any other path is refused.
        other = Upload(base, "/api/v1/memories", chunked=True)
        assert other.push(BOUND)
        assert other.answer()[0] == 413 and other.sent < BOUND
        other.close()
        assert _get(base, "/healthz") == 200
