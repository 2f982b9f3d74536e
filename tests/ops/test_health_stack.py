"""The positive control of honest health: on a healthy stack (database with pgvector, Redis, a real Celery worker
answering the ping, a working embedder, every memory with a vector) the overall status is `ok` — so the degraded
answers in tests/ops/test_health.py are not a report that can never say ok."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from memory.providers import embeddings
from ops import health
from palace.models import Palace
from tests.fakes.memories import make_memory
from tests.fakes.openai_server import FakeOpenAI


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_healthy_stack_reports_ok(
    worker: tuple[subprocess.Popen[bytes], str, Path],
    alice: Any,
    make_user: Callable[..., Any],
    settings: Any,
) -> None:
    _, name, _ = worker
    staff = Client()
    staff.force_login(make_user("operator", admin=True))
    palace = Palace.objects.get(personal_owner=alice)
    make_memory(palace, content="The staging cluster lives in eu-west-1.", embedding=[0.05] * embeddings.DIM)
    settings.ATRIUM_HEALTH_CACHE_SECONDS = 0
    health.health_cache_clear()
    embeddings.reset_after_fork()
    try:
        with FakeOpenAI() as endpoint:
            settings.ATRIUM_EMBEDDER = "openai"
            settings.ATRIUM_EMBEDDINGS_BASE_URL = endpoint.base_url
            report = staff.get("/api/v1/health").json()
            public = Client().get("/api/v1/health").json()
    finally:
        embeddings.reset_after_fork()
        health.health_cache_clear()
    assert name in report["celery"]["workers"], report
    assert all(part["ok"] is True for part in report.values() if isinstance(part, dict)), report
    assert report["status"] == "ok"
    assert public["status"] == "ok" and "workers" not in public["celery"]
