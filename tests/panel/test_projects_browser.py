"""Projects in Chromium against uvicorn: alice creates a project from a git origin, invites bob, who accepts on his
Projects page, changes his role and transfers ownership to him; the header's scope switcher offers the project at
once."""

from __future__ import annotations

from typing import Any

from palace.models import Membership, OpLog, Palace
from tests.panel.browserkit import BROWSER_TEST, login, shot

pytestmark = BROWSER_TEST


def _roles(palace: Palace) -> dict[str, str]:
    rows = Membership.objects.filter(palace=palace, state=Membership.State.ACCEPTED)
    return dict(rows.values_list("user__username", "role"))


def test_create_invite_change_role_and_transfer(
    asgi_server: str,
    browser_page: Any,
    alice: Any,
    bob: Any,
) -> None:
    from playwright.sync_api import expect

    page, base = browser_page, asgi_server
    login(page, base, "alice")
    expect(page.locator("#scope-project")).to_have_count(0)  # no project yet
    page.get_by_role("link", name="Projects").click()
    page.wait_for_url(f"{base}/projects/")
    page.fill("#id_origin", "git@github.com:team/app.git")
    page.get_by_role("button", name="Create project").click()
    palace = Palace.objects.get(origin_key="github.com/team/app")
    page.wait_for_url(f"{base}/projects/{palace.pk}/")
    expect(page.locator("#scope-project")).to_have_value(str(palace.pk))  # the switcher has it, chosen
    expect(page.locator("#scope-project option")).to_have_text(["github.com/team/app · owner"])

    page.fill("#invite-username", "bob")
    page.select_option("#invite-role", "viewer")
    page.get_by_role("button", name="Invite").click()
    page.wait_for_url(f"{base}/projects/{palace.pk}/")
    expect(page.locator("#member-bob")).to_have_count(0)  # an invitation, not yet a member (issue 24)
    assert _roles(palace) == {"alice": "owner"}
    login(page, base, "bob")  # bob accepts on his Projects page
    page.goto(f"{base}/projects/")
    expect(page.locator("#scope-project")).to_have_count(0)  # not among his projects before he accepts
    page.locator("#invitations").get_by_role("button", name="Accept").click()
    page.wait_for_url(f"{base}/projects/{palace.pk}/")
    login(page, base, "alice")
    page.goto(f"{base}/projects/{palace.pk}/")
    expect(page.locator("#member-bob .role")).to_have_text("viewer")
    page.locator("#member-bob select[name=role]").select_option("editor")
    page.locator("#member-bob").get_by_role("button", name="Change role").click()
    expect(page.locator("#member-bob .role")).to_have_text("editor")
    assert _roles(palace) == {"alice": "owner", "bob": "editor"}
    shot(page, "project")

    page.select_option("#transfer-username", "bob")
    page.get_by_role("button", name="Transfer ownership").click()
    expect(page.locator("#member-bob .role")).to_have_text("owner")
    expect(page.locator("#member-alice .role")).to_have_text("editor")
    expect(page.locator("#invite")).to_have_count(0)  # no longer an owner: no member forms
    assert _roles(palace) == {"alice": "editor", "bob": "owner"}
    ops = OpLog.objects.filter(palace=palace, actor_user=alice).order_by("pk").values_list("op", flat=True)
    assert list(ops) == ["palace.create", "member.invite", "member.set", "member.transfer"]
