"""The browser tests' kit: Debian's Chromium driven by Playwright against uvicorn serving config.asgi (the same ASGI
app as production, so the websocket is real). Registered as a plugin in tests/conftest.py, so its fixtures serve
every browser test wherever it lives; a test module takes the rest by import:

    from tests.panel.browserkit import BROWSER_TEST, PASSWORD, login, shot

    pytestmark = BROWSER_TEST

- `asgi_server`: uvicorn on config.asgi:application in a thread of this process (it shares the test database);
- `chromium`: one browser per test module; `browser_page`: a fresh context (cookies, storage) in it per test;
- a missing Chromium skips the browser tests with the reason on a developer's machine, and fails them under CI
  (`CI` set, as .ci/run sets it): CI that cannot run them must not pass without them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import pytest
from django.conf import settings
from django.db import connection

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"
PASSWORD = "correct-horse-9"  # tests/conftest.py's make_user default

BROWSER_TEST = [
    pytest.mark.slow,
    # whitenoise serves static files with a sync iterator; under ASGI Django says so once per file
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous iterators"),
    pytest.mark.django_db(transaction=True),
    # Set up first in every browser test (it is module-scoped), so a missing Chromium is reported before a server
    # starts, even in a test that opens no page.
    pytest.mark.usefixtures("chromium"),
]


def under_ci(environ: Mapping[str, str]) -> bool:
    """CI systems set CI (GitHub Actions, GitLab: "true"; .ci/run: "1"); empty, 0, false or no mean not CI."""
    return environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}


def without_chromium(*, installed: bool, ci: bool) -> Literal["run", "skip", "fail"]:
    """What the browser tests do: run when Chromium is there; without it, fail under CI, skip elsewhere."""
    if installed:
        return "run"
    return "fail" if ci else "skip"


def require_chromium(environ: Mapping[str, str] = os.environ) -> None:
    action = without_chromium(installed=shutil.which(CHROMIUM) is not None, ci=under_ci(environ))
    if action == "fail":
        pytest.fail(
            f"{CHROMIUM} is not installed and CI is set: under CI the browser tests must run, not skip "
            "(.ci/run installs Debian's chromium with apt-get; see its warning above)",
            pytrace=False,
        )
    if action == "skip":
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium); under CI (CI=1) this is a failure")


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    require_chromium()
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        # Playwright's sync API runs an event loop in this thread for the module; the ORM is still used synchronously.
        mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
            )
            yield browser
            browser.close()


@pytest.fixture
def browser_page(chromium: Any) -> Iterator[Any]:
    # An earlier test's server teardown may have ended this thread's connection (it terminates the server threads'
    # backends): start it afresh.
    with contextlib.suppress(Exception):
        connection.close()
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    context.set_default_timeout(5000)
    page = context.new_page()
    yield page
    context.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def asgi_server(transactional_db: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """uvicorn on config.asgi:application in a thread of this process, so it shares the test database."""
    import uvicorn

    from config.asgi import application

    # Playwright's sync API runs an event loop in this thread; Django's ORM is still used synchronously here.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    # This thread's own connection (a later test reuses it): Playwright's event loop gives the thread a second one,
    # so the teardown below must spare this one by pid, not only the connection it happens to run on.
    connection.ensure_connection()
    own_pid = connection.connection.info.backend_pid
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(application, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
    # The server's worker threads kept their own database connections; end them so the test database can be
    # flushed and dropped. Client backends only: an autovacuum worker on this database is listed too, and ending it
    # needs pg_signal_autovacuum_worker (PostgreSQL 17+; a whole CI run's teardown failed on one).
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> %s"
            " AND backend_type = 'client backend'",
            [own_pid],
        )


def login(page: Any, base: str, username: str) -> None:
    page.context.clear_cookies()  # a test that logs in as someone else next starts signed out
    page.goto(f"{base}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/today/")


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
