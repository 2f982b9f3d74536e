"""The admin's reason in Chromium: a change form refuses to save without it (the form error), saves with it, and the
delete page asks for it too; each change leaves its op row."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group
from django.db import connection

from palace.models import Membership, OpLog, Palace
from tests.panel.browserkit import BROWSER_TEST, PASSWORD

pytestmark = BROWSER_TEST


def test_the_admin_asks_for_a_reason_in_a_real_browser(
    asgi_server: str,
    browser_page: Any,
    project: Palace,
    bob: Any,
    make_user: Any,
) -> None:
    from playwright.sync_api import expect

    connection.close()  # a browser test run before may have ended this thread's session (tests/panel/test_browser.py)
    root = make_user("root", admin=True)
    group = Group.objects.create(name="auditors")
    membership = Membership.objects.get(palace=project, user=bob)
    page, base = browser_page, asgi_server
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", "root")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")

    page.goto(f"{base}/admin/palace/membership/{membership.pk}/change/")
    page.select_option("#id_role", "editor")
    assert page.locator("textarea[name=reason]").count() == 1
    page.click("input[name=_save]")  # the admin's forms are `novalidate`: the server refuses with the form error
    expect(page.locator(".errorlist")).to_contain_text("A reason is required")
    membership.refresh_from_db()
    assert membership.role == "viewer" and not OpLog.objects.filter(op__startswith="admin.").exists()

    page.fill("#id_reason", "bob leads the release")
    page.click("input[name=_save]")
    page.wait_for_url(f"{base}/admin/palace/membership/")
    membership.refresh_from_db()
    assert membership.role == "editor"
    change = OpLog.objects.get(op="admin.change", target_id=membership.pk)
    assert (change.actor_user_id, change.reason) == (root.pk, "bob leads the release")
    assert change.detail["changed"]["role"] == {"before": "viewer", "after": "editor"}

    page.goto(f"{base}/admin/auth/group/{group.pk}/delete/")
    page.fill("#id_reason", "unused group")
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/auth/group/")
    assert not Group.objects.filter(pk=group.pk).exists()
    assert OpLog.objects.get(op="admin.delete", target_kind="group").reason == "unused group"
