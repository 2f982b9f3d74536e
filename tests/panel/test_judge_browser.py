"""The Judge view in Chromium against uvicorn: deciding a contradiction with a button, and the admin's settings
card (the key never reaches the page source, Test connection reports the fake endpoint)."""

from __future__ import annotations

from typing import Any

from django.db import connection

from memory.models import Edge, JudgeSettings
from memory.pipeline import memory_save
from palace.actors import Actor
from palace.models import Palace
from tests.fakes.openai_server import FakeOpenAI, chat_json
from tests.panel.test_browser import PASSWORD, asgi_server, browser_page, pytestmark, shot  # noqa: F401

KEY = "sk-browser-secret-4242-abcd"


def _login(page: Any, base: str, username: str) -> None:
    page.goto(f"{base}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/today/")


def test_decide_a_contradiction_and_use_the_settings_card(  # noqa: F811  (fixtures imported above)
    asgi_server: str,  # noqa: F811
    browser_page: Any,  # noqa: F811
    make_user: Any,
) -> None:
    """One flow (the server fixture supports one browser test per module run): an admin decides a contradiction
    with a button, then saves and tests the judge settings."""
    from playwright.sync_api import expect

    # A browser test run before this one ends other database sessions at teardown (tests/panel/test_browser.py),
    # which can include the one this thread kept; start from a fresh connection.
    connection.close()
    root = make_user("root", admin=True)
    personal = Palace.objects.get(personal_owner=root)
    actor = Actor.for_user(root)
    memory_save(palace=personal, actor=actor, content="The API server listens on port 8000.", kind="fact")
    edge = memory_save(palace=personal, actor=actor, content="The API server listens on port 8001.", kind="fact").edges[
        0
    ]
    page, base = browser_page, asgi_server
    _login(page, base, "root")
    page.get_by_role("link", name="Judge").click()
    page.wait_for_url(f"{base}/judge/")
    card = page.locator(f"#edge-{edge}")
    expect(card).to_contain_text("port 8000")
    expect(card).to_contain_text("port 8001")
    shot(page, "judge")
    card.locator("input[name=reason]").fill("the port moved")
    card.get_by_role("button", name="Keep the newer").click()
    page.wait_for_url(f"{base}/judge/")
    expect(page.locator(f"#edge-{edge}")).to_have_count(0)
    decided = Edge.objects.get(pk=edge)
    assert (decided.status, decided.resolution, decided.resolution_reason) == (
        "confirmed",
        "keep_newer",
        "the port moved",
    )

    with FakeOpenAI() as fake:
        page.goto(f"{base}/judge/")
        settings_card = page.locator("#judge-settings")
        settings_card.locator("input[name=enabled]").check()
        settings_card.locator("#j-url").fill(fake.base_url)
        settings_card.locator("#j-model").fill("judge-b")
        settings_card.locator("#j-key").fill(KEY)
        settings_card.get_by_role("button", name="Save").click()
        page.wait_for_url(f"{base}/judge/")
        assert JudgeSettings.objects.get().enabled
        expect(page.locator("#j-key")).to_have_value("")  # never back-filled
        assert KEY not in page.content() and "abcd" in page.content()
        fake.script_chat([chat_json({"same": 1.0, "contradicts": 0.0, "reason": "same"})])
        page.locator("#judge-settings").get_by_role("button", name="Test connection").click()
        expect(page.locator(".test-report")).to_contain_text("Reachable: judge-b answered in")
        assert KEY not in page.content()
        shot(page, "judge-settings")
