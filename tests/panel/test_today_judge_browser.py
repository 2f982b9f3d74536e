"""Today and Judge as a person sees them, at 1440 px and on a 390 px phone: the pair's two cards side by side on a
wide screen and stacked on the phone, the differing words marked, the open count a link to Judge, the week chart
drawn, and no console error on either page."""

from __future__ import annotations

from typing import Any

import pytest

from palace.models import Palace
from tests.fakes.judging import contradiction
from tests.panel.browserkit import BROWSER_TEST, login, shot

pytestmark = BROWSER_TEST


@pytest.mark.parametrize("width", [1440, 390])
def test_pair_cards_side_by_side_or_stacked_without_console_errors(
    asgi_server: str, browser_page: Any, make_user: Any, width: int
) -> None:
    from playwright.sync_api import expect

    erin = make_user("erin")
    edge = contradiction(Palace.objects.get(personal_owner=erin), erin).edge
    page, base = browser_page, asgi_server
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_viewport_size({"width": width, "height": 900})
    login(page, base, "erin")
    expect(page.locator("#summary svg.week g.day")).to_have_count(7)
    expect(page.locator("#stat-open")).to_have_text("1")
    page.locator("a.stat-link").click()  # "1 open on Judge" leads there
    page.wait_for_url(f"{base}/judge/")
    card = page.locator(f"#edge-{edge.pk}")
    expect(card.locator("mark.diff.del")).to_have_text("8000")
    expect(card.locator("mark.diff.ins")).to_have_text("8001")
    expect(card.locator(".why-text")).to_contain_text("“8001” instead of “8000”")
    older, newer = card.locator(".side.older").bounding_box(), card.locator(".side.newer").bounding_box()
    assert older is not None and newer is not None
    if width == 1440:  # side by side: one row, the older on the left
        assert abs(older["y"] - newer["y"]) < 1 and newer["x"] >= older["x"] + older["width"]
    else:  # stacked on the phone, each as wide as the card allows, and nothing wider than the screen
        assert newer["y"] >= older["y"] + older["height"] and abs(older["x"] - newer["x"]) < 1
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    shot(page, f"judge-pair-{width}")
    assert errors == []
