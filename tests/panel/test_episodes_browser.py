"""Episodes in Chromium against uvicorn: sessions headed by their summaries — a live capture's (model), a
backfill's (rules), an agent's MCP session (no capture summary: its first episode, labelled) — Nearby, the range."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.utils import timezone

from capture.models import CaptureSession
from palace.models import Palace
from tests.panel.browserkit import BROWSER_TEST, login, shot

pytestmark = BROWSER_TEST


def test_sessions_are_headed_by_their_summary_and_say_how_it_was_made(
    asgi_server: str, browser_page: Any, alice: Any, make_memory: Any
) -> None:
    from playwright.sync_api import expect

    connection.close()  # an earlier browser test's teardown may have ended this thread's connection
    mine = Palace.objects.get(personal_owner=alice)
    day = timezone.make_aware(datetime(2026, 11, 20, 9, 0))
    make_memory(mine, "Asked how to rotate the staging keys", kind="episode", session="cap-1", occurred_at=day)
    rotated = make_memory(
        mine, "Rotated them with the vault CLI", kind="episode", session="cap-1", occurred_at=day + timedelta(minutes=5)
    )
    make_memory(
        mine, "Imported: chose banker's rounding", kind="episode", session="bf-1", occurred_at=day - timedelta(days=3)
    )
    make_memory(
        mine,
        "Agent noted the flaky login test",
        kind="episode",
        session="mcp-1",
        placard="flaky login test",
        occurred_at=day + timedelta(minutes=30),
    )
    CaptureSession.objects.create(
        user=alice, palace=mine, key="cap-1", summary="Rotated the staging keys with the vault.", summary_method="llm"
    )
    CaptureSession.objects.create(
        user=alice,
        palace=mine,
        key="bf-1",
        summary="Settled on banker's rounding.",
        summary_method="rules",
        source=CaptureSession.Source.BACKFILL,
    )
    page, base = browser_page, asgi_server

    login(page, base, "alice")
    page.get_by_role("link", name="Episodes").click()
    page.wait_for_url(f"{base}/episodes/")
    groups = page.locator("#timeline section.group")
    expect(groups).to_have_count(3)
    captured, agent, backfilled = (page.locator(f'section.group[aria-label="{s}"]') for s in ("cap-1", "mcp-1", "bf-1"))
    expect(captured.locator(".summary")).to_have_text("Rotated the staging keys with the vault.")
    expect(captured.locator(".how")).to_have_text("summary by the model · capture")
    expect(backfilled.locator(".summary")).to_have_text("Settled on banker's rounding.")
    expect(backfilled.locator(".how")).to_have_text("summary by the rules · backfill")
    expect(agent.locator(".summary")).to_have_text("flaky login test")
    expect(agent.locator(".how")).to_have_text("first episode (no session summary)")
    assert [groups.nth(i).get_attribute("aria-label") for i in range(3)] == ["mcp-1", "cap-1", "bf-1"]
    shot(page, "episodes-summaries")

    page.locator(f"#ep-{rotated.pk}").get_by_role("link", name="Nearby").click()
    expect(page.locator(f"#near-{rotated.pk}")).to_contain_text("Asked how to rotate the staging keys")

    page.fill("#ep-from", "2026-11-16")
    page.fill("#ep-to", "2026-11-18")
    page.get_by_role("button", name="Show").click()
    expect(groups).to_have_count(1)
    expect(groups.first.locator(".how")).to_have_text("summary by the rules · backfill")
    assert "from=2026-11-16" in page.url
