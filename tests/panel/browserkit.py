"""One Chromium per test module: `chromium` is launched once for the module, `browser_page` gives each test a fresh
context (cookies, storage) in it. Use with tests/panel/test_browser.py's `asgi_server`:

    from tests.panel.browserkit import browser_page, chromium  # noqa: F401
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from tests.panel.test_browser import ARTIFACTS, CHROMIUM, PASSWORD


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
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


def login(page: Any, base: str, username: str) -> None:
    page.context.clear_cookies()  # a test that logs in as someone else next starts signed out
    page.goto(f"{base}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/today/")
