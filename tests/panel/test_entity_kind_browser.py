"""Changing an entity's kind in Chromium (issue 26): the owner picks "person" for a rules-found "other" and the page
shows the new kind; no console error."""

from __future__ import annotations

from typing import Any

from django.db import connection

from memory.models import Entity
from palace.models import OpLog, Palace
from tests.entity_rows import make_entity
from tests.panel.browserkit import BROWSER_TEST, login

pytestmark = BROWSER_TEST


def test_the_owner_changes_an_entitys_kind(
    asgi_server: str, browser_page: Any, alice: Any, project: Palace, make_memory: Any
) -> None:
    from playwright.sync_api import expect

    connection.close()  # an earlier browser test's teardown may have ended this thread's connection
    note = make_memory(project, "Marco Rossi will review the Terraform plan on Monday.")
    marco = make_entity(project, "Marco Rossi", kind="other", memories=[note])
    page, base = browser_page, asgi_server
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    login(page, base, "alice")
    page.goto(f"{base}/entities/{marco.pk}/")
    expect(page.locator("h1 .tag")).to_have_text("other")
    expect(page.locator("#ent-kind-set")).to_have_value("other")
    page.select_option("#ent-kind-set", "person")
    page.get_by_role("button", name="Change kind").click()
    expect(page.locator("h1 .tag")).to_have_text("person")
    expect(page.locator("#ent-kind-set")).to_have_value("person")
    assert Entity.objects.get(pk=marco.pk).kind == "person"
    assert OpLog.objects.get(op="entity.kind").detail == {"from": "other", "to": "person"}
    assert errors == []
