"""The Entities view in Chromium against uvicorn: the list with its kind filter and search, an entity's page with
its linked memories and the facts region, renaming and merging as the owner, and no forms for a viewer."""

from __future__ import annotations

from typing import Any

from django.db import connection

from memory.models import Entity
from palace.models import Palace
from tests.entity_rows import make_entity
from tests.panel.browserkit import BROWSER_TEST, login, shot

pytestmark = BROWSER_TEST


def test_entities_list_open_rename_merge_and_viewer(
    asgi_server: str,
    browser_page: Any,
    alice: Any,
    bob: Any,
    project: Palace,
    make_memory: Any,
) -> None:
    """One flow (the server fixture supports one browser test per module run)."""
    from playwright.sync_api import expect

    connection.close()  # an earlier browser test's teardown may have ended this thread's connection
    billing = make_memory(project, "Carol ships the billing service on Fridays")
    oncall = make_memory(project, "Carol is on call this week")
    upgrade = make_memory(project, "The Postgres 17 upgrade is planned for December")
    carol = make_entity(project, "Carol Smith", aliases=["Caro"], memories=[billing, oncall])
    make_entity(project, "PostgreSQL", kind="tool", aliases=["pg"], memories=[upgrade])
    carlos = make_entity(project, "Carlos", memories=[oncall])
    page, base = browser_page, asgi_server

    login(page, base, "alice")
    page.get_by_role("link", name="Entities").click()
    page.wait_for_url(f"{base}/entities/")
    expect(page.locator("#entity-list")).to_contain_text("No entities in this scope yet.")
    page.get_by_role("button", name="Project").click()
    rows = page.locator("#entity-list tbody tr")
    expect(rows).to_have_count(3)
    expect(page.locator(f"#entity-{carol.pk}")).to_contain_text("Caro")
    expect(page.locator(f"#entity-{carol.pk} td.count")).to_have_text("2")
    page.select_option("#ent-kind", "tool")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("PostgreSQL")
    page.select_option("#ent-kind", "")
    expect(rows).to_have_count(3)
    page.fill("#ent-q", "caro")  # an alias: htmx searches as one types
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Carol Smith")
    assert "q=caro" in page.url
    shot(page, "entities")

    rows.first.get_by_role("link", name="Carol Smith").click()
    page.wait_for_url(f"{base}/entities/{carol.pk}/")
    linked = page.locator("#linked")
    expect(linked).to_contain_text("billing service on Fridays")
    expect(linked).to_contain_text("on call this week")
    expect(linked).not_to_contain_text("Postgres 17")
    # The facts region loads the timeline fragment (/entities/<id>/facts/); its own form asks for another point.
    facts = page.locator("#facts")
    expect(facts).not_to_contain_text("Loading facts")
    expect(facts).to_contain_text("Facts true now")
    with page.expect_request(lambda r: f"/entities/{carol.pk}/facts/?" in r.url and "as_of=2026-11-01" in r.url):
        facts.locator("input[name=as_of]").fill("2026-11-01")
        facts.get_by_role("button", name="Show").click()
    expect(facts).to_contain_text("Facts true on 2026-11-01")
    shot(page, "entity")

    page.fill("#ent-name", "Carol S.")
    page.get_by_role("button", name="Rename").click()
    expect(page.locator("h1")).to_contain_text("Carol S.")
    expect(page.locator("#aliases")).to_contain_text("Carol Smith")
    assert Entity.objects.get(pk=carol.pk).name == "Carol S."

    page.goto(f"{base}/entities/{carlos.pk}/")
    page.select_option("#ent-into", str(carol.pk))
    page.get_by_role("button", name="Merge").click()
    page.wait_for_url(f"{base}/entities/{carol.pk}/")
    expect(page.locator("#aliases")).to_contain_text("Carlos")
    assert Entity.objects.get(pk=carlos.pk).merged_into_id == carol.pk

    login(page, base, "bob")  # a viewer of the project
    page.goto(f"{base}/entities/{carol.pk}/")
    expect(page.locator("#linked")).to_contain_text("billing service on Fridays")
    expect(page.locator("h1")).to_contain_text("Carol S.")
    expect(page.locator("#entity-edit")).to_have_count(0)
    expect(page.locator("#rename-form, #aliases-form, #merge-form")).to_have_count(0)
    expect(page.locator("#aliases button")).to_have_count(0)
    shot(page, "entity-viewer")
