"""Health reports measured figures, or unknown with a reason — never a healthy default. Strangers see only the
states; staff see the figures. One measurement serves a burst, and the worker ping holds no database connection."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from django.db import connection
from django.db.backends.signals import connection_created
from django.test import Client

from memory.providers import embeddings
from ops import health
from palace.models import Palace
from tests.conftest import FailingEmbedder
from tests.fakes.memories import make_memory
from tests.fakes.openai_server import FakeOpenAI, http_error

DETAIL_KEYS = {"server", "pgvector", "pending", "workers", "total", "without_vector", "reason", "model", "ms"}


@pytest.fixture(autouse=True)
def measured_each_call(settings: Any) -> Iterator[None]:
    """Each call measures again, so a test can change a part and read the change (the cache has its own tests)."""
    settings.ATRIUM_HEALTH_CACHE_SECONDS = 0
    health.health_cache_clear()
    yield
    health.health_cache_clear()


@pytest.fixture
def staff(make_user: Callable[..., Any]) -> Client:
    client = Client()
    client.force_login(make_user("operator", admin=True))
    return client


@pytest.fixture
def embedder_state() -> Iterator[None]:
    """Tests that build the process's embedder from settings leave it as they found it."""
    yield
    embeddings.reset_after_fork()
    embeddings._state.error = ""


class UnitEmbedder:
    """An in-process embedder that works: deterministic unit vectors."""

    name = "unit"

    def passages(self, texts: list[str]) -> Any:
        vectors = np.ones((len(texts), embeddings.DIM), dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def query(self, text: str) -> Any:
        return self.passages([text])[0]


def test_liveness_is_plain(client: Any, db: Any) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"alive": True}


def test_health_reports_real_database_and_pgvector_figures(staff: Client) -> None:
    report = staff.get("/api/v1/health").json()
    assert report["database"]["ok"] is True
    assert report["database"]["pgvector"].startswith("0.")
    assert "PostgreSQL" in report["database"]["server"]
    assert report["migrations"] == {"ok": True, "pending": [], "ms": report["migrations"]["ms"]}
    assert report["redis"]["ok"] is True
    assert report["memories"]["ok"] is True


def test_a_stranger_sees_only_states_and_staff_see_the_details(
    client: Client, staff: Client, alice: Any, make_user: Callable[..., Any], token_for: Callable[..., str]
) -> None:
    def details(report: dict[str, Any]) -> set[str]:
        return {key for part in report.values() if isinstance(part, dict) for key in part} & DETAIL_KEYS

    # Positive control: a staff session and a staff user's token get versions, worker list, counts and reasons.
    full = staff.get("/api/v1/health").json()
    assert "PostgreSQL" in full["database"]["server"] and full["database"]["pgvector"]
    assert full["celery"]["workers"] == [] and "reason" in full["celery"]
    assert "total" in full["memories"]
    admin_token = token_for(make_user("root", admin=True))
    by_token = client.get("/api/v1/health", HTTP_AUTHORIZATION=f"Bearer {admin_token}").json()
    assert by_token["database"]["server"] == full["database"]["server"]

    stranger = Client().get("/api/v1/health")
    member_session = Client()
    member_session.force_login(alice)
    member_token = Client().get("/api/v1/health", HTTP_AUTHORIZATION=f"Bearer {token_for(alice)}")
    for response in (stranger, member_session.get("/api/v1/health"), member_token):
        assert response.status_code == 200
        report = response.json()
        assert report["status"] == full["status"] == "degraded"  # no worker runs in this test
        assert report["database"] == {"ok": True} and report["celery"] == {"ok": False}
        assert set(report) == set(full)
        assert details(report) == set()
        assert "PostgreSQL" not in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_burst_of_health_calls_measures_once(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.ATRIUM_HEALTH_CACHE_SECONDS = 60
    measured: list[str] = []
    real = health.health_report

    def counted() -> dict[str, Any]:
        measured.append(threading.current_thread().name)
        return real()  # waits about a second for the worker ping: the burst arrives meanwhile

    monkeypatch.setattr(health, "health_report", counted)
    answers: list[int] = []

    def call() -> None:
        answers.append(Client().get("/api/v1/health").status_code)

    burst = [threading.Thread(target=call) for _ in range(8)]
    for thread in burst:
        thread.start()
    for thread in burst:
        thread.join(30)
    assert answers == [200] * 8
    assert len(measured) == 1
    health.health_cache_clear()  # positive control: once the measurement is gone, the next call measures again
    assert Client().get("/api/v1/health").status_code == 200
    assert len(measured) == 2


@pytest.mark.django_db(transaction=True)
def test_the_worker_ping_holds_no_database_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    control = health._broker_app().control
    real_ping = control.ping
    during_ping: list[bool] = []
    opened: list[str] = []

    def ping(**kwargs: Any) -> Any:
        during_ping.append(connection.connection is not None)
        return real_ping(**kwargs)

    def created(sender: Any, connection: Any, **kwargs: Any) -> None:
        opened.append(threading.current_thread().name)

    monkeypatch.setattr(control, "ping", ping)
    connection.ensure_connection()
    connection_created.connect(created, weak=False)
    try:
        report = health.health_report()
    finally:
        connection_created.disconnect(created)
    assert report["database"]["ok"] is True and report["memories"]["ok"] is True  # it did use the database
    assert during_ping == [False]  # ... and had closed its connection before the ping
    assert opened == []  # the measurement used the open connection, and nothing opened one after it was closed


def test_broken_redis_is_reported_and_celery_becomes_unknown(staff: Client, settings: Any) -> None:
    assert staff.get("/api/v1/health").json()["redis"]["ok"] is True  # positive control
    settings.REDIS_URL = "unix:///nonexistent/atrium-test/redis.sock"
    report = staff.get("/api/v1/health").json()
    assert report["redis"]["ok"] is False
    assert "reason" in report["redis"]
    assert report["celery"]["ok"] is None
    assert "unknown" in report["celery"]["reason"]
    assert report["status"] == "degraded"


def test_no_worker_is_reported_as_absent_not_healthy(staff: Client) -> None:
    report = staff.get("/api/v1/health").json()
    # No worker runs during this test: a ping gets no answer, and the report says so.
    assert report["celery"]["ok"] is False
    assert report["celery"]["workers"] == []
    assert report["status"] != "ok"


def test_a_failing_embedder_is_reported_with_its_reason(staff: Client, settings: Any, embedder_state: None) -> None:
    settings.ATRIUM_EMBEDDER = "openai"
    settings.ATRIUM_EMBEDDINGS_BASE_URL = ""
    embeddings.reset_after_fork()
    with pytest.raises(embeddings.EmbedderUnavailable):
        embeddings.get_embedder()
    report = staff.get("/api/v1/health").json()
    assert report["embedder"]["state"] == "failed"
    assert report["embedder"]["ok"] is False
    assert "ATRIUM_EMBEDDINGS_BASE_URL" in report["embedder"]["reason"]


def test_an_embedder_not_yet_loaded_is_not_claimed_healthy(staff: Client, embedder_state: None) -> None:
    embeddings.reset_after_fork()
    embeddings._state.error = ""
    report = staff.get("/api/v1/health").json()
    assert report["embedder"]["state"] == "not_loaded"
    assert report["embedder"]["ok"] is None


def test_switched_off_embedder_is_reported_off(staff: Client, settings: Any) -> None:
    settings.ATRIUM_EMBEDDER = "off"
    report = staff.get("/api/v1/health").json()
    assert report["embedder"]["state"] == "off"
    assert report["embedder"]["ok"] is None


def test_an_in_process_embedder_failing_at_run_time_is_degraded(db: Any, request: pytest.FixtureRequest) -> None:
    embeddings.set_embedder(UnitEmbedder())
    try:
        working = health.health_report()["embedder"]
    finally:
        embeddings.set_embedder(None, active=False)
    assert working["ok"] is True and working["probe"] == "ok"  # positive control: a working embedder passes
    request.getfixturevalue("embedder_down")  # loaded, but every call now fails
    report = health.health_report()
    assert report["embedder"]["state"] == "failed" and report["embedder"]["ok"] is False
    assert "embedder is down" in report["embedder"]["reason"]
    assert report["status"] == "degraded"
    assert isinstance(embeddings.get_embedder(), FailingEmbedder)


def test_an_embeddings_endpoint_that_goes_down_is_degraded(
    db: Any, settings: Any, monkeypatch: pytest.MonkeyPatch, embedder_state: None
) -> None:
    monkeypatch.setattr(health, "EMBEDDER_PROBE_SECONDS", 0)
    embeddings.reset_after_fork()
    with FakeOpenAI() as endpoint:
        settings.ATRIUM_EMBEDDER = "openai"
        settings.ATRIUM_EMBEDDINGS_BASE_URL = endpoint.base_url
        up = health.health_report()["embedder"]
        endpoint.script_embeddings([http_error(503)])
        down = health.health_report()["embedder"]
        probes = len(endpoint.requests)
    assert up["ok"] is True and up["state"] == "loaded"  # positive control: probed once, and it answered
    assert down["ok"] is False and down["state"] == "failed" and "503" in down["reason"]
    assert probes == 2


def test_the_embedder_probe_is_kept_for_a_short_time(db: Any, settings: Any, embedder_state: None) -> None:
    embeddings.reset_after_fork()
    with FakeOpenAI() as endpoint:
        settings.ATRIUM_EMBEDDER = "openai"
        settings.ATRIUM_EMBEDDINGS_BASE_URL = endpoint.base_url
        first, second = health.health_report()["embedder"], health.health_report()["embedder"]
        assert len(endpoint.requests) == 1
    assert first["ok"] is True and second["ok"] is True


def test_memories_without_vectors_make_the_status_degraded(alice: Any) -> None:
    palace = Palace.objects.get(personal_owner=alice)
    make_memory(palace, content="The staging cluster lives in eu-west-1.", embedding=[0.05] * embeddings.DIM)
    control = health.health_report()["memories"]
    assert control["ok"] is True and control["without_vector"] == 0  # positive control: every memory has a vector
    make_memory(palace, content="The release train leaves on Thursdays.")
    memories = health.health_report()["memories"]
    assert memories["ok"] is False and memories["without_vector"] == 1 and "1 memories" in memories["reason"]
    assert health.health_report()["status"] == "degraded"


def test_a_missing_pgvector_makes_the_status_degraded_not_down(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert health.health_report()["database"]["ok"] is True  # positive control: the real extension is found
    monkeypatch.setattr(health, "VECTOR_EXTENSION", "vector_not_installed")
    report = health.health_report()
    assert report["database"]["ok"] is False and report["database"]["pgvector"] is None
    assert "pgvector" in report["database"]["reason"]
    assert report["status"] == "degraded"
