"""The Judge view in Chromium against uvicorn, one browser for the module: each of the four decisions with its
button (and a refused one), the admin's settings card (the key never reaches the page source, Test connection reports
the fake endpoint), and the live refresh of open contradictions, proposals and recent rulings (with the page's
filters) without a reload."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import DistillProposal, Edge, JudgeSettings, Memory
from palace.models import Palace
from tests.fakes.judging import contradiction, deploy_day_proposal
from tests.fakes.openai_server import FakeOpenAI, chat_json
from tests.panel.browserkit import BROWSER_TEST, login, shot

KEY = "sk-browser-secret-4242-abcd"

pytestmark = BROWSER_TEST


@pytest.mark.parametrize("decision", ["keep_newer", "keep_older", "both_stand", "merge"])
def test_each_decision_with_its_button(
    asgi_server: str,
    browser_page: Any,
    make_user: Any,
    decision: str,
) -> None:
    from playwright.sync_api import expect

    erin = make_user("erin")
    made = contradiction(Palace.objects.get(personal_owner=erin), erin)
    edge, (older, newer, _) = made.edge, made.ids
    page, base = browser_page, asgi_server
    login(page, base, "erin")
    page.get_by_role("link", name="Judge").click()
    page.wait_for_url(f"{base}/judge/")
    card = page.locator(f"#edge-{edge.pk}")
    expect(card).to_contain_text("port 8000")
    expect(card).to_contain_text("port 8001")
    labels = {
        "keep_newer": "Keep the newer",
        "keep_older": "Keep the older",
        "both_stand": "Both stand",
        "merge": "Merge into a correction",
    }
    if decision == "both_stand":  # refused without a reason: the message, and the edge still pending
        card.get_by_role("button", name=labels[decision]).click()
        expect(page.locator("[role=alert]")).to_contain_text("“Both stand” needs a reason")
        assert Edge.objects.get(pk=edge.pk).status == "pending"
        page.goto(f"{base}/judge/")
        card = page.locator(f"#edge-{edge.pk}")
    card.locator("[name=reason]").fill("the port moved")
    if decision == "merge":
        card.locator("textarea[name=content]").fill("The API server listens on port 8001 (8000 until November).")
    card.get_by_role("button", name=labels[decision]).click()
    page.wait_for_url(f"{base}/judge/")
    expect(page.locator(f"#edge-{edge.pk}")).to_have_count(0)
    expect(page.locator("#judge-open")).to_contain_text("No open contradictions")
    edge.refresh_from_db()
    assert (edge.resolution, edge.resolution_reason) == (decision, "the port moved")
    assert edge.status == ("dismissed" if decision == "both_stand" else "confirmed")
    statuses = dict(Memory.objects.filter(pk__in=[older, newer]).values_list("pk", "status"))
    expected = {
        "keep_newer": {older: "superseded", newer: "active"},
        "keep_older": {older: "active", newer: "forgotten"},
        "both_stand": {older: "active", newer: "active"},
        "merge": {older: "superseded", newer: "superseded"},
    }[decision]
    assert statuses == expected
    if decision == "keep_older":
        assert Memory.objects.get(pk=newer).epitaph == "the port moved"
    if decision == "merge":
        merged = Memory.objects.get(content__startswith="The API server listens on port 8001 (8000")
        assert merged.status == "active" and merged.supersedes_id == older
    shot(page, f"judge-{decision}")


def test_settings_card(
    asgi_server: str,
    browser_page: Any,
    make_user: Any,
) -> None:
    make_user("root", admin=True)
    page, base = browser_page, asgi_server
    login(page, base, "root")
    from playwright.sync_api import expect

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


def test_judge_refreshes_live_and_applies_a_proposal(
    asgi_server: str,
    browser_page: Any,
    make_user: Any,
) -> None:
    from playwright.sync_api import expect

    dana = make_user("dana")
    personal = Palace.objects.get(personal_owner=dana)
    proposal = deploy_day_proposal(personal)
    page, base = browser_page, asgi_server
    login(page, base, "dana")
    page.goto(f"{base}/judge/")
    expect(page.locator("#judge-open")).to_contain_text("No open contradictions")
    expect(page.locator("#judge-rulings .ruling")).to_have_count(0)
    page.evaluate("window.__kept = true")  # gone if the page reloads
    edge = contradiction(personal, dana).edge
    expect(page.locator(f"#edge-{edge.pk}")).to_contain_text("port 8001", timeout=5000)
    expect(page.locator("#judge-rulings .ruling")).to_have_count(1)  # the ruling that made the edge, live
    assert page.evaluate("window.__kept === true")  # refreshed in place, not reloaded
    page.locator(f"#proposal-{proposal.pk}").get_by_role("button", name="Apply").click()
    expect(page.locator(f"#proposal-{proposal.pk}")).to_have_count(0)
    assert page.evaluate("window.__kept === true")
    assert DistillProposal.objects.get(pk=proposal.pk).status == "applied"


def test_live_rulings_keep_the_page_filters(
    asgi_server: str,
    browser_page: Any,
    make_user: Any,
) -> None:
    """A filter that excludes the new ruling still excludes it after the live refresh (which did happen: the new
    edge appeared); without the filter the same kind of ruling appears."""
    from playwright.sync_api import expect

    fay = make_user("fay")
    personal = Palace.objects.get(personal_owner=fay)
    page, base = browser_page, asgi_server
    login(page, base, "fay")
    page.goto(f"{base}/judge/?verdict=merge")
    page.evaluate("window.__kept = true")
    first = contradiction(personal, fay).edge
    expect(page.locator(f"#edge-{first.pk}")).to_have_count(1, timeout=5000)
    expect(page.locator("#judge-rulings")).to_contain_text("No rulings yet")
    expect(page.locator("#f-verdict")).to_have_value("merge")
    page.goto(f"{base}/judge/")
    expect(page.locator("#judge-rulings .ruling")).to_have_count(1)
    page.evaluate("window.__kept = true")
    second = contradiction(
        personal, fay, "The backup job runs at 02:00 every night.", "The backup job runs at 03:00 every night."
    ).edge
    expect(page.locator(f"#edge-{second.pk}")).to_have_count(1, timeout=5000)
    expect(page.locator("#judge-rulings .ruling")).to_have_count(2)
    assert page.evaluate("window.__kept === true")
