"""The Palace search in Chromium against uvicorn: a miss shows the How line and nothing else; choosing the overview
fallback in the form brings the Overview region, labelled; setting it as the default on the settings page brings it
without choosing, and the How line says it came from the setting."""

from __future__ import annotations

from typing import Any

from accounts.models import UserSettings
from palace.models import Palace
from tests.fakes.team_notes import MISS, save_team_notes
from tests.panel.browserkit import BROWSER_TEST, login, shot

pytestmark = BROWSER_TEST


def test_fallback_choice_overview_region_and_the_default_from_settings(
    asgi_server: str,  # noqa: F811
    browser_page: Any,  # noqa: F811
    alice: Any,
) -> None:
    from playwright.sync_api import expect

    save_team_notes(Palace.objects.get(personal_owner=alice))
    page, base = browser_page, asgi_server
    login(page, base, "alice")
    page.goto(f"{base}/palace/")

    page.fill("#q", MISS)
    page.press("#q", "Enter")
    how = page.locator("#search-how")
    expect(how).to_contain_text("How: arms full-text + semantic · floor 0.8")
    expect(how).to_contain_text("fallback show nothing (your setting)")
    expect(page.locator("#overview")).to_have_count(0)  # off unless asked

    page.select_option("#fallback", "overview")  # the form searches again on change (htmx)
    expect(how).to_contain_text("fallback show an overview (chosen here, shown below)")
    overview = page.locator("#overview")
    expect(overview.get_by_role("heading", name="Overview")).to_be_visible()
    expect(overview).to_contain_text("an overview, not an answer")
    rows = overview.locator("li.row")
    expect(rows).to_have_count(5)
    for label in rows.evaluate_all("rows => rows.map(r => r.dataset.label)"):
        assert label == "overview"
    expect(rows.first).to_contain_text("overview · recent")
    assert "fallback=overview" in page.url  # the choice is in the address, like the other filters
    shot(page, "palace-search-overview")

    page.locator("details.usermenu summary").click()
    page.get_by_role("link", name="Settings").click()
    page.wait_for_url(f"{base}/account/")
    page.get_by_label("show an overview").check()
    page.get_by_role("button", name="Save").click()
    expect(page.locator("p.ok")).to_have_text("Saved.")
    assert UserSettings.objects.get(user=alice).search_fallback == "overview"

    page.goto(f"{base}/palace/")
    page.fill("#q", MISS)
    page.press("#q", "Enter")
    expect(how).to_contain_text("fallback show an overview (your setting, shown below)")
    expect(page.locator("#overview li.row")).to_have_count(5)
