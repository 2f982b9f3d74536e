"""Today's curated-profile card in Chromium against uvicorn: edit, a conflict (another edit lands while the form is
open: the card says so and keeps the typed text), the diff between versions, and a rollback that appends."""

from __future__ import annotations

from typing import Any

from django.db import connection

from memory.context import curated_edit
from memory.models import ProfileVersion
from palace.actors import Actor
from palace.models import Palace
from tests.panel.browserkit import BROWSER_TEST, PASSWORD, shot

pytestmark = BROWSER_TEST


def test_edit_conflict_diff_and_rollback(
    asgi_server: str,
    browser_page: Any,
    alice: Any,
) -> None:
    from playwright.sync_api import expect

    connection.close()  # an earlier browser test's teardown may have ended this thread's connection
    personal = Palace.objects.get(personal_owner=alice)
    page, base = browser_page, asgi_server
    page.goto(f"{base}/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/today/")

    card = page.locator(f"#profile-{personal.pk}")
    expect(card).to_contain_text("No curated profile yet.")
    card.locator("textarea[name=content]").fill("I prefer green tea.\nI review pull requests in the morning.")
    card.get_by_role("button", name="Save a new version").click()
    expect(card.locator("p.ok")).to_contain_text("Saved as version 1.")
    expect(card.locator(".profile-text")).to_contain_text("green tea")

    # Another session saves version 2 while this form still carries version 1.
    curated_edit(
        palace=personal,
        actor=Actor.for_user(alice),
        content="I prefer oolong.\nI review pull requests in the morning.",
        expected_version=1,
    )
    card.locator("textarea[name=content]").fill("My edit from the stale form.")
    card.get_by_role("button", name="Save a new version").click()
    expect(card.locator(".conflict")).to_contain_text("Someone saved version 2 while you edited version 1")
    expect(card.locator("textarea[name=content]")).to_have_value("My edit from the stale form.")
    expect(card.locator(".profile-text")).to_contain_text("oolong")
    assert ProfileVersion.objects.filter(palace=personal).count() == 2  # the stale edit never landed
    shot(page, "profile-conflict")

    # The diff of version 2 against 1.
    card.locator("li[data-version='2'] a.diff-link").click()
    expect(card.locator("pre.diff .d-del")).to_contain_text("-I prefer green tea.")
    expect(card.locator("pre.diff .d-add")).to_contain_text("+I prefer oolong.")
    shot(page, "profile-diff")

    # Roll back to version 1: a new version 3, history kept.
    card.locator("button[data-rollback='1']").click()
    expect(card.locator("p.ok")).to_contain_text("version 3 copies version 1")
    expect(card.locator(".profile-text")).to_contain_text("green tea")
    expect(card.locator("li[data-version]")).to_have_count(3)
    rows = ProfileVersion.objects.filter(palace=personal).order_by("version")
    contents = list(rows.values_list("content", flat=True))
    assert contents[2] == contents[0] and len(contents) == 3
