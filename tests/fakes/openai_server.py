"""A small fake OpenAI-compatible server on loopback, for tests of code that leaves the machine.

It speaks the real JSON shapes of ``POST /v1/chat/completions`` and ``POST /v1/embeddings``, records every
request, and answers each path from a script of behaviours (queued replies, consumed in order)::

    with FakeOpenAI(embedding_dim=8) as srv:
        srv.script_chat([http_error(500), chat_json({"ok": True})])
        ...  # point the code under test at srv.base_url ("http://127.0.0.1:<port>/v1")
        assert len(srv.requests_to(CHAT_PATH)) == 2

When a path's script is empty, its standing behaviour answers (``srv.standing(path, behaviour)``: an endpoint that
is down, slow or healthy for as long as a test says, whoever calls it); without one, chat answers 400 with an
"unscripted" error (so a test that forgot to script a reply fails loudly, and without being retried), and embeddings
answer with deterministic unit vectors derived from a hash of each input (``fake_embedding``). ``Slow(s, then=None)``
waits, then gives that default answer. Stdlib only, so it can serve any test suite.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import struct
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
DEFAULT_EMBEDDING_DIM = 384


# ---------------------------------------------------------------------------------------------------------------
# Behaviours: what the server does with one request.


@dataclass(frozen=True)
class ChatContent:
    """A 200 chat completion whose ``choices[0].message.content`` is ``content`` (``None`` for a null content)."""

    content: str | None
    finish_reason: str = "stop"
    refusal: str | None = None


@dataclass(frozen=True)
class Embeddings:
    """A 200 embeddings response with these exact vectors (one per input, in order)."""

    vectors: tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class RawJSON:
    """Any JSON body with any status, e.g. a 200 without ``choices``."""

    body: Any
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RawBody:
    """Raw bytes with any status and content type, e.g. an HTML error page from a proxy."""

    body: bytes
    status: int = 200
    content_type: str = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Slow:
    """Wait ``seconds`` before sending anything, then behave like ``then``."""

    seconds: float
    then: Behaviour | None  # None: the path's default answer


@dataclass(frozen=True)
class Trickle:
    """Send the chat completion for ``reply`` at once in headers, then its body ``chunk_size`` bytes at a time,
    ``chunk_delay`` seconds apart: each read is quick, the whole reply is slow."""

    reply: ChatContent
    chunk_delay: float
    chunk_size: int = 16


@dataclass(frozen=True)
class DropConnection:
    """Close the socket without sending a response, as a crashed upstream does."""


type Behaviour = ChatContent | Embeddings | RawJSON | RawBody | Slow | Trickle | DropConnection


def chat_content(content: str | None, *, finish_reason: str = "stop", refusal: str | None = None) -> ChatContent:
    return ChatContent(content=content, finish_reason=finish_reason, refusal=refusal)


def chat_json(payload: Any) -> ChatContent:
    """A chat completion whose message content is ``payload`` serialised as JSON."""
    return ChatContent(content=json.dumps(payload))


def embeddings(vectors: Iterable[Iterable[float]]) -> Embeddings:
    return Embeddings(vectors=tuple(tuple(float(x) for x in vector) for vector in vectors))


def raw_json(body: Any, *, status: int = 200, headers: Mapping[str, str] | None = None) -> RawJSON:
    return RawJSON(body=body, status=status, headers=dict(headers or {}))


def raw_body(body: bytes | str, *, status: int = 200, content_type: str = "text/plain; charset=utf-8") -> RawBody:
    return RawBody(body=body.encode() if isinstance(body, str) else body, status=status, content_type=content_type)


def http_error(status: int, *, message: str | None = None, headers: Mapping[str, str] | None = None) -> RawJSON:
    """An error status with OpenAI's error body shape."""
    body = {
        "error": {
            "message": message or f"fake error {status}",
            "type": "rate_limit_error" if status == 429 else "server_error" if status >= 500 else "invalid_request",
            "param": None,
            "code": None,
        }
    }
    return RawJSON(body=body, status=status, headers=dict(headers or {}))


def slow(seconds: float, then: Behaviour | None = None) -> Slow:
    """Sleep ``seconds`` first; by default then answer a chat completion with ``{}``."""
    return Slow(seconds=seconds, then=then if then is not None else chat_json({}))


def trickle(reply: ChatContent, *, chunk_delay: float, chunk_size: int = 16) -> Trickle:
    return Trickle(reply=reply, chunk_delay=chunk_delay, chunk_size=chunk_size)


def drop_connection() -> DropConnection:
    return DropConnection()


# ---------------------------------------------------------------------------------------------------------------
# Deterministic embeddings.


def fake_embedding(text: str, *, dim: int = DEFAULT_EMBEDDING_DIM) -> list[float]:
    """A unit vector derived only from a hash of ``text``: equal texts embed equally, different texts roughly
    orthogonally. Tests can call this to know what the fake will return."""
    if dim < 1:
        raise ValueError("dim must be >= 1")
    raw = hashlib.shake_256(text.encode("utf-8")).digest(4 * dim)
    # Centre the 32-bit words on zero so directions spread over the whole sphere.
    values = [(word / 2**31) - 1.0 for word in struct.unpack(f">{dim}I", raw)]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


# ---------------------------------------------------------------------------------------------------------------
# The server.


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # keys lower-cased
    body: bytes

    @property
    def json(self) -> Any:
        """The body parsed as JSON, or ``None`` when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None


class FakeOpenAI:
    """An OpenAI-compatible HTTP server on 127.0.0.1 with an OS-chosen port, run in a background thread."""

    def __init__(self, *, embedding_dim: int = DEFAULT_EMBEDDING_DIM, model: str = "fake-model") -> None:
        self.embedding_dim = embedding_dim
        self.model = model
        self._lock = threading.Lock()
        self._scripts: dict[str, deque[Behaviour]] = {CHAT_PATH: deque(), EMBEDDINGS_PATH: deque()}
        self._standing: dict[str, Behaviour] = {}
        self._requests: list[RecordedRequest] = []
        self._completions = 0
        # Set on close so that handlers sleeping in a Slow behaviour wake up instead of holding the test run.
        self._closing = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        server.daemon_threads = True
        # Do not join handler threads on close: a client that timed out may have left one sleeping.
        server.block_on_close = False
        self._server = server
        # A short poll interval keeps close() (which waits for the serve loop to notice) from adding 0.5 s per test.
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.01}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- addresses --------------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ending in ``/v1`` (clients append ``/chat/completions``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting --------------------------------------------------------------------------------------------

    def script(self, path: str, behaviours: Iterable[Behaviour]) -> None:
        """Queue ``behaviours`` for ``path``; each request to it consumes the next one."""
        with self._lock:
            self._scripts.setdefault(path, deque()).extend(behaviours)

    def script_chat(self, behaviours: Iterable[Behaviour]) -> None:
        self.script(CHAT_PATH, behaviours)

    def script_embeddings(self, behaviours: Iterable[Behaviour]) -> None:
        self.script(EMBEDDINGS_PATH, behaviours)

    def standing(self, path: str, behaviour: Behaviour | None) -> None:
        """Answer every request to ``path`` with ``behaviour`` while its script is empty (None: the default again)."""
        with self._lock:
            if behaviour is None:
                self._standing.pop(path, None)
            else:
                self._standing[path] = behaviour

    def pending(self, path: str = CHAT_PATH) -> int:
        """How many scripted behaviours for ``path`` have not been consumed yet."""
        with self._lock:
            return len(self._scripts.get(path, ()))

    # -- records ----------------------------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    # -- serving (called from handler threads) ----------------------------------------------------------------

    def _take(self, request: RecordedRequest) -> Behaviour | None:
        with self._lock:
            self._requests.append(request)
            queue = self._scripts.get(request.path)
            return queue.popleft() if queue else self._standing.get(request.path)

    def _next_completion_id(self) -> str:
        with self._lock:
            self._completions += 1
            return f"chatcmpl-fake-{self._completions}"


def _make_handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            request = RecordedRequest(
                method="POST",
                path=self.path,
                headers={key.lower(): value for key, value in self.headers.items()},
                body=body,
            )
            behaviour = fake._take(request)
            # The client may give up (time out) before we answer; that is the point of Slow.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._perform(behaviour, request)

        def do_GET(self) -> None:
            self._send_json(404, {"error": {"message": f"no route GET {self.path}", "type": "invalid_request"}})

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

        def _perform(self, behaviour: Behaviour | None, request: RecordedRequest) -> None:
            while isinstance(behaviour, Slow):
                if fake._closing.wait(behaviour.seconds):
                    self.close_connection = True
                    return
                behaviour = behaviour.then
            match behaviour:
                case None:
                    self._default(request)
                case ChatContent():
                    self._send_json(200, _chat_completion(fake, request, behaviour))
                case Embeddings():
                    self._send_json(200, _embeddings_body(fake, request, [list(v) for v in behaviour.vectors]))
                case RawJSON():
                    self._send_json(behaviour.status, behaviour.body, headers=behaviour.headers)
                case RawBody():
                    self._send(behaviour.status, behaviour.body, content_type=behaviour.content_type)
                case Trickle():
                    self._trickle(_chat_completion(fake, request, behaviour.reply), behaviour)
                case DropConnection():
                    self.close_connection = True

        def _default(self, request: RecordedRequest) -> None:
            if request.path == EMBEDDINGS_PATH:
                payload = request.json if isinstance(request.json, dict) else {}
                inputs = payload.get("input", [])
                texts = [inputs] if isinstance(inputs, str) else [str(i) for i in inputs]
                # Honour the request's `dimensions`, as text-embedding-3 models do.
                dim = int(payload.get("dimensions") or fake.embedding_dim)
                vectors = [fake_embedding(text, dim=dim) for text in texts]
                self._send_json(200, _embeddings_body(fake, request, vectors))
            elif request.path == CHAT_PATH:
                message = "fake: no scripted behaviour left for POST /v1/chat/completions"
                self._send_json(400, {"error": {"message": message, "type": "fake_unscripted"}})
            else:
                self._send_json(404, {"error": {"message": f"no route POST {request.path}", "type": "invalid_request"}})

        def _trickle(self, payload: Any, behaviour: Trickle) -> None:
            body = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for start in range(0, len(body), behaviour.chunk_size):
                self.wfile.write(body[start : start + behaviour.chunk_size])
                self.wfile.flush()
                if fake._closing.wait(behaviour.chunk_delay):
                    self.close_connection = True
                    return

        def _send_json(self, status: int, payload: Any, *, headers: Mapping[str, str] | None = None) -> None:
            self._send(status, json.dumps(payload).encode(), content_type="application/json", headers=headers)

        def _send(
            self, status: int, body: bytes, *, content_type: str, headers: Mapping[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

    return Handler


def _request_model(fake: FakeOpenAI, request: RecordedRequest) -> str:
    payload = request.json
    model = payload.get("model") if isinstance(payload, dict) else None
    return model if isinstance(model, str) else fake.model


def _chat_completion(fake: FakeOpenAI, request: RecordedRequest, reply: ChatContent) -> dict[str, Any]:
    completion_tokens = len((reply.content or "").split())
    prompt_tokens = max(len(request.body) // 4, 1)
    return {
        "id": fake._next_completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": _request_model(fake, request),
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content, "refusal": reply.refusal},
                "logprobs": None,
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _embeddings_body(fake: FakeOpenAI, request: RecordedRequest, vectors: list[list[float]]) -> dict[str, Any]:
    tokens = max(len(request.body) // 4, 1)
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": vector} for i, vector in enumerate(vectors)],
        "model": _request_model(fake, request),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
