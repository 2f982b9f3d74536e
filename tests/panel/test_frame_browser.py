"""The panel's frame in Chromium (issue 26, "Broken" 6): a live push to Today, Judge and a memory page logs no
console error (each page gets only the fragments whose targets it has), /favicon.ico answers, and a missing page is
the panel's 404 with its navigation, in English and in Chinese."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from palace.models import Palace
from tests.panel.browserkit import BROWSER_TEST, login, shot

pytestmark = BROWSER_TEST

DEADLINE_MS = 10_000  # generous for a loaded machine; the waits end as soon as the push has arrived


def _rest_save(base: str, raw: str, content: str) -> int:
    request = urllib.request.Request(
        f"{base}/api/v1/memories",
        data=json.dumps({"content": content, "kind": "fact"}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {raw}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:
        return int(json.loads(response.read())["memory"]["id"])


def test_a_live_push_logs_no_console_error_on_today_judge_and_a_memory_page(
    asgi_server: str, browser_page: Any, alice: Any, make_memory: Any, token_for: Any
) -> None:
    from playwright.sync_api import expect

    memory = make_memory(Palace.objects.get(personal_owner=alice), "The release train leaves every second Tuesday")
    raw = token_for(alice)
    page, base = browser_page, asgi_server
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"{page.url}: {exc}"))
    login(page, base, "alice")
    texts = iter(["Standup moved to 9:30", "The VPN certificate renews in March", "Lunch talks are on Thursdays"])
    for path in ("/today/", "/judge/", f"/palace/m/{memory.pk}/"):
        page.goto(f"{base}{path}")
        expect(page.locator("body[data-live=open]")).to_have_count(1)
        # Count the out-of-band swaps the push makes (the due badge is on every page, and comes last: after the
        # debounce that follows the row), then save through REST while the page is open.
        page.evaluate(
            "() => { window.oobSwaps = 0;"
            " document.body.addEventListener('htmx:oobAfterSwap', () => window.oobSwaps++) }"
        )
        _rest_save(base, raw, next(texts))
        page.wait_for_function("() => window.oobSwaps > 0", timeout=DEADLINE_MS)
        if path == "/today/":  # the page with the counts gets them
            expect(page.locator("#stat-memories")).to_have_text("2", timeout=DEADLINE_MS)
    assert errors == []
    shot(page, "live-push-memory-page")


def test_favicon_and_the_404_page_with_navigation_in_english_and_chinese(
    asgi_server: str, browser_page: Any, alice: Any
) -> None:
    from playwright.sync_api import expect

    page, base = browser_page, asgi_server
    icon = page.request.get(f"{base}/favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"] == "image/x-icon" and icon.body()[:4] == b"\0\0\1\0"

    login(page, base, "alice")
    linked = page.locator("link[rel=icon]").get_attribute("href")
    assert linked and page.request.get(f"{base}{linked}").status == 200

    response = page.goto(f"{base}/no-such-page/")
    assert response is not None and response.status == 404
    expect(page.locator("h1")).to_have_text("Page not found")
    expect(page.locator(".mainnav")).to_contain_text("Today")
    expect(page.locator(".mainnav a[href='/judge/']")).to_have_text("Judge")
    shot(page, "404-en")

    page.locator("form.lang button[lang=zh-hans]").click()  # the switch on the 404 page brings it back in Chinese
    page.wait_for_selector("html[lang=zh-hans]")
    assert page.url == f"{base}/no-such-page/"
    expect(page.locator("h1")).to_have_text("页面不存在")
    expect(page.locator(".mainnav a[href='/today/']")).to_contain_text("今日")
    shot(page, "404-zh")
