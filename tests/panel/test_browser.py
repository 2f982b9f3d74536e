"""The panel in a real browser (Debian's Chromium driven by Playwright) against uvicorn serving config.asgi — the
same ASGI app as production, so the websocket is real. Screenshots of every view go to test-artifacts/."""

from __future__ import annotations

import json
import threading
import urllib.request
from datetime import timedelta
from typing import Any

from django.utils import timezone

from memory.models import Memory
from memory.save import memory_save
from palace.actors import Actor
from palace.models import Palace
from tests.panel.browserkit import BROWSER_TEST, PASSWORD, shot

pytestmark = BROWSER_TEST
# How long a live update may take to reach the page before the test gives up (a deadline, not a goal: the goal is
# well under a second, and a loaded CI machine must not fail a correct build).
LIVE = 15_000


def seed(alice, project):
    """A small palace through the real write pipeline: facts, decisions, episodes in a session, one due memory."""
    actor = Actor.for_user(alice)
    personal = Palace.objects.get(personal_owner=alice)
    texts = [
        ("fact", "The staging database runs on db-7.internal", "staging db 2026-11"),
        ("preference", "Alice prefers short commit messages in the imperative", "commit style"),
        ("decision", "We chose PostgreSQL with pgvector over a separate vector store", "pgvector decision 2026-10"),
        ("skill", "To rebuild the search index run atrium reindex --palace N", "reindex how-to"),
        ("fact", "The office wifi password rotates every Monday", "wifi rotation"),
        ("preference", "Alice reads the panel in Chinese on Fridays", "language habit"),
        ("decision", "Releases are cut on Tuesdays after the stand-up", "release day"),
        ("fact", "Bob owns the billing service", "billing owner"),
    ]
    saved = [memory_save(palace=personal, actor=actor, content=c, kind=k, placard=p) for k, c, p in texts]
    start = timezone.now() - timedelta(hours=3)
    for i, line in enumerate(
        ["Opened the incident for the failing deploy", "Rolled back release 41", "Wrote the post-mortem"]
    ):
        memory_save(
            palace=personal,
            actor=actor,
            content=line,
            kind="episode",
            source_session="session-incident-41",
            occurred_at=start + timedelta(minutes=20 * i),
            speaker="alice",
        )
    memory_save(palace=project, actor=actor, content="The demo project deploys with GitHub Actions", kind="decision")
    due = saved[2].memory
    Memory.objects.filter(pk=due.pk).update(review_enrolled=True, created_at=timezone.now() - timedelta(days=3))
    return personal, due


def test_panel_flows_in_a_real_browser(asgi_server, browser_page, alice, project, token_for, make_user):
    from playwright.sync_api import expect

    personal, due = seed(alice, project)
    page, base = browser_page, asgi_server
    # Everything below runs under the Content-Security-Policy: the browser must report no violation.
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)

    # Log in.
    page.goto(f"{base}/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/today/")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("#part-rooms .room").first).to_be_visible()
    expect(page.locator("#health svg")).to_be_visible()
    expect(page.locator("a.lazy")).to_have_count(0)
    shot(page, "today")

    # Review a due memory: the cue shows no body; Reveal shows it; Remembered grades it.
    cue = page.locator(f"#cue-{due.pk}")
    expect(cue).to_contain_text("pgvector decision")
    expect(cue).not_to_contain_text("separate vector store")
    cue.get_by_role("button", name="Reveal").click()
    expect(cue).to_contain_text("separate vector store")
    shot(page, "today-revealed")
    cue.get_by_role("button", name="Remembered").click()
    expect(page.locator("#due")).to_contain_text("Graded")
    expect(page.locator(f"#cue-{due.pk}")).to_have_count(0)

    # Palace: search, inline detail, a correction through the supersede chain, forget and restore.
    page.goto(f"{base}/palace/")
    expect(page.locator(".mrow").first).to_be_visible()
    shot(page, "palace")
    page.fill("#q", "staging database")
    page.press("#q", "Enter")
    expect(page.locator("#memory-rows .how").first).to_be_visible()
    shot(page, "palace-search")
    target = Memory.objects.get(palace=personal, placard="billing owner")
    page.goto(f"{base}/palace/")
    row = page.locator(f"#m-{target.pk}")
    row.hover()
    row.get_by_role("link", name="Open").click()
    detail = page.locator(f"#detail-{target.pk}")
    detail.locator("textarea").fill("Carol owns the billing service since November")
    detail.get_by_role("button", name="Save correction").click()
    expect(detail.locator(".chain")).to_contain_text("Bob owns the billing service")
    expect(detail.locator(".chain")).to_contain_text("Carol owns the billing service")
    shot(page, "palace-supersede")
    newest = Memory.objects.get(supersedes=target)
    assert newest.content.startswith("Carol") and Memory.objects.get(pk=target.pk).status == "superseded"
    detail.locator("form.forget input[name=reason]").fill("Carol handed billing back")  # required, and confirmed
    page.once("dialog", lambda d: d.accept())
    detail.get_by_role("button", name="Forget").click()
    expect(detail.locator(".status").first).to_contain_text("forgotten")
    detail.get_by_role("button", name="Restore").click()
    expect(detail.locator(".status").first).to_contain_text("active")
    assert Memory.objects.get(pk=newest.pk).status == "active"

    # Scope and language switches drive every view.
    page.goto(f"{base}/log/")
    page.get_by_role("button", name="Both").click()
    expect(page.locator(".scopeline")).to_contain_text("atrium-test/demo")
    page.get_by_role("button", name="中文").click()
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.locator(".mainnav")).to_contain_text("日志")
    shot(page, "log-zh")

    # A REST write shows up in the open Log (websocket, no reload). How soon is `atrium bench`'s to measure; here
    # the row only has to come, within a deadline generous enough for a loaded machine.
    expect(page.locator("body[data-live=open]")).to_have_count(1)  # the websocket is connected
    page.evaluate("() => { window.noReload = true }")
    raw = token_for(alice)
    body = json.dumps(
        {
            "content": "Deploy freeze starts on December 20",
            "kind": "decision",
            "project": "git@github.com:atrium-test/demo.git",
        }
    )
    request = urllib.request.Request(
        f"{base}/api/v1/memories",
        data=body.encode(),
        method="POST",
        headers={"Authorization": f"Bearer {raw}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:
        saved = json.loads(response.read())
    expect(page.locator(f"#log-rows .logrow[id='op-{_op_of(saved['memory']['id'])}']")).to_be_visible(timeout=LIVE)
    assert page.evaluate("() => window.noReload === true")
    shot(page, "log-live")

    # An MCP write (the official client over HTTP, as an agent makes it) shows up live too: in the open Log as a
    # new row, and on Today in the memory count — without a reload.
    page.evaluate("() => { window.noReload = true }")
    saved_id = mcp_save(f"{base}/mcp", raw, "The on-call rota changes every second Monday")
    expect(page.locator(f"#log-rows .logrow[id='op-{_op_of(saved_id)}']")).to_be_visible(timeout=LIVE)
    assert page.evaluate("() => window.noReload === true")
    shot(page, "log-live-mcp")
    page.goto(f"{base}/today/")
    expect(page.locator("a.lazy")).to_have_count(0)
    expect(page.locator("body[data-live=open]")).to_have_count(1)
    before = int(page.locator("#stat-memories").inner_text())
    page.evaluate("() => { window.noReload = true }")
    mcp_save(f"{base}/mcp", raw, "Backups are tested on the first Friday of each month")
    expect(page.locator("#stat-memories")).to_have_text(str(before + 1), timeout=LIVE)
    assert page.evaluate("() => window.noReload === true")
    shot(page, "today-live-mcp")

    # The other views, in Chinese.
    for name, url in [
        ("corridor", "/corridor/"),
        ("rooms-zh", "/corridor/rooms/?kind=fact"),
        ("episodes", "/episodes/"),
        ("today-zh", "/today/"),
    ]:
        page.goto(f"{base}{url}")
        expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
        expect(page.locator("a.lazy")).to_have_count(0)  # Today's regions load after the page
        shot(page, name)
    page.get_by_role("button", name="EN").click()
    page.goto(f"{base}/corridor/")
    page.locator(".corridor-svg .node").first.click()
    expect(page.locator("#room-panel .room-card")).to_be_visible()
    page.fill("#bench-q", "billing")
    page.press("#bench-q", "Enter")
    expect(page.locator("#bench-hits .how").first).to_be_visible()
    shot(page, "corridor-bench")
    page.goto(f"{base}/episodes/")
    page.locator(".group .mrow").first.hover()
    page.locator(".group .mrow").first.get_by_role("link", name="Nearby").click()
    expect(page.locator(".nearby")).to_be_visible()
    shot(page, "episodes-nearby")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{base}/palace/")
    shot(page, "palace-phone")
    page.set_viewport_size({"width": 1280, "height": 900})
    script_behaviours_under_csp(page, base, make_user)
    assert violations == []


def script_behaviours_under_csp(page: Any, base: str, make_user: Any) -> None:
    """The behaviours that need script beyond the flow above: the palace filters' triggers, the token copy button,
    Swagger UI and the admin's own script."""
    from playwright.sync_api import expect

    page.goto(f"{base}/palace/")
    page.select_option("#sort", "route")  # hx-trigger "change from:select": an htmx swap that pushes the URL
    page.wait_for_url("**sort=route**")
    page.locator("input[name=due]").check()  # "change from:input[type=checkbox]"
    page.wait_for_url("**due=1**")
    page.goto(f"{base}/tokens/")
    page.fill("#id_label", "laptop")
    page.locator("form.toolbar button[type=submit]").click()
    expect(page.locator("#raw-token")).to_be_visible()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.locator("button[data-copy=raw-token]").click()
    assert page.evaluate("() => navigator.clipboard.readText()") == page.locator("#raw-token").inner_text()
    page.goto(f"{base}/api/v1/docs", timeout=60000)  # a 1.4 MB bundle through whitenoise on a busy machine
    expect(page.locator("#swagger-ui .info .title")).to_contain_text("Atrium", timeout=10000)
    make_user("root", admin=True)
    page.context.clear_cookies()
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", "root")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.goto(f"{base}/admin/memory/memory/")
    expect(page.locator("#result_list")).to_be_visible()
    page.locator("#action-toggle").click()  # the admin's own script (select all)
    expect(page.locator(".action-counter")).to_contain_text("selected")


def mcp_save(url: str, token: str, content: str) -> int:
    """memory_save through the official MCP client over real HTTP with a bearer token; returns the new memory's id.
    It runs on a thread of its own: Playwright's sync API owns this one's loop."""
    import asyncio

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    out: dict[str, Any] = {}

    async def save() -> None:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as client,  # type: ignore[arg-type]
        ):
            out["result"] = await client.call_tool("memory_save", {"content": content, "kind": "fact"})

    def run() -> None:
        try:
            asyncio.run(save())
        except BaseException as exc:  # re-raised in the test's thread
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    if "error" in out:
        raise out["error"]
    result = out["result"]
    assert not result.is_error, result
    item = result.structured_content["items"][0]
    assert item["disposition"] == "accept", item
    return int(item["id"])


def _op_of(memory_id: int) -> int:
    from palace.models import OpLog

    return OpLog.objects.filter(target_kind="memory", target_id=memory_id, op="memory.save").values_list(
        "pk", flat=True
    )[0]
