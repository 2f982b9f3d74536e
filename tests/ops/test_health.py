"""Health reports measured figures, or unknown with a reason — never a healthy default."""

from __future__ import annotations

from typing import Any

import pytest

from memory import embeddings


class BrokenEmbedder:
    name = "broken"

    def passages(self, texts: list[str]) -> Any:
        raise RuntimeError("model file unreadable")

    def query(self, text: str) -> Any:
        raise RuntimeError("model file unreadable")


def test_liveness_is_plain(client: Any, db: Any) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"alive": True}


def test_health_reports_real_database_and_pgvector_figures(client: Any, db: Any) -> None:
    report = client.get("/api/v1/health").json()
    assert report["database"]["ok"] is True
    assert report["database"]["pgvector"].startswith("0.")
    assert "PostgreSQL" in report["database"]["server"]
    assert report["migrations"] == {"ok": True, "pending": [], "ms": report["migrations"]["ms"]}
    assert report["redis"]["ok"] is True
    assert report["memories"]["ok"] is True


def test_broken_redis_is_reported_and_celery_becomes_unknown(client: Any, db: Any, settings: Any) -> None:
    assert client.get("/api/v1/health").json()["redis"]["ok"] is True  # positive control
    settings.REDIS_URL = "unix:///nonexistent/atrium-test/redis.sock"
    report = client.get("/api/v1/health").json()
    assert report["redis"]["ok"] is False
    assert "reason" in report["redis"]
    assert report["celery"]["ok"] is None
    assert "unknown" in report["celery"]["reason"]
    assert report["status"] == "degraded"


def test_no_worker_is_reported_as_absent_not_healthy(client: Any, db: Any) -> None:
    report = client.get("/api/v1/health").json()
    # No worker runs during this test: a ping gets no answer, and the report says so.
    assert report["celery"]["ok"] is False
    assert report["celery"]["workers"] == []
    assert report["status"] != "ok"


@pytest.fixture
def broken_embedder() -> Any:
    embeddings.set_embedder(BrokenEmbedder())
    yield
    embeddings.set_embedder(None, active=False)


def test_a_failing_embedder_is_reported_with_its_reason(client: Any, db: Any, settings: Any) -> None:
    settings.ATRIUM_EMBEDDER = "openai"
    settings.ATRIUM_EMBEDDINGS_BASE_URL = ""
    embeddings.reset_after_fork()
    with pytest.raises(embeddings.EmbedderUnavailable):
        embeddings.get_embedder()
    report = client.get("/api/v1/health").json()
    assert report["embedder"]["state"] == "failed"
    assert report["embedder"]["ok"] is False
    assert "ATRIUM_EMBEDDINGS_BASE_URL" in report["embedder"]["reason"]
    embeddings._state.error = ""


def test_an_embedder_not_yet_loaded_is_not_claimed_healthy(client: Any, db: Any) -> None:
    embeddings.reset_after_fork()
    embeddings._state.error = ""
    report = client.get("/api/v1/health").json()
    assert report["embedder"]["state"] == "not_loaded"
    assert report["embedder"]["ok"] is None


def test_switched_off_embedder_is_reported_off(client: Any, db: Any, settings: Any) -> None:
    settings.ATRIUM_EMBEDDER = "off"
    report = client.get("/api/v1/health").json()
    assert report["embedder"]["state"] == "off"
    assert report["embedder"]["ok"] is None
