"""The Judge page in Chromium refreshes its open contradictions live (no reload) when a contradiction is saved in
the user's palace, and applies a distillation proposal with the htmx button."""

from __future__ import annotations

from typing import Any

from django.db import connection

from memory.models import DistillProposal
from memory.pipeline import memory_save
from palace.actors import Actor
from palace.models import Palace
from tests.panel.test_browser import asgi_server, browser_page, pytestmark  # noqa: F401
from tests.panel.test_judge_browser import _login
from tests.panel.test_judge_proposals import _proposal


def test_judge_refreshes_live_and_applies_a_proposal(  # noqa: F811  (fixtures imported above)
    asgi_server: str,  # noqa: F811
    browser_page: Any,  # noqa: F811
    make_user: Any,
) -> None:
    from playwright.sync_api import expect

    connection.close()  # see tests/panel/test_judge_browser.py
    dana = make_user("dana")
    personal = Palace.objects.get(personal_owner=dana)
    proposal = _proposal(personal)
    page, base = browser_page, asgi_server
    _login(page, base, "dana")
    page.goto(f"{base}/judge/")
    expect(page.locator("#judge-open")).to_contain_text("No open contradictions")
    page.evaluate("window.__kept = true")  # gone if the page reloads
    actor = Actor.for_user(dana)
    memory_save(palace=personal, actor=actor, content="The API server listens on port 8000.", kind="fact")
    edge = memory_save(palace=personal, actor=actor, content="The API server listens on port 8001.", kind="fact")
    expect(page.locator(f"#edge-{edge.edges[0]}")).to_contain_text("port 8001", timeout=5000)
    assert page.evaluate("window.__kept === true")  # refreshed in place, not reloaded
    page.locator(f"#proposal-{proposal.pk}").get_by_role("button", name="Apply").click()
    expect(page.locator(f"#proposal-{proposal.pk}")).to_have_count(0)
    assert page.evaluate("window.__kept === true")
    assert DistillProposal.objects.get(pk=proposal.pk).status == "applied"
