"""The audit console in Chromium against uvicorn (config.asgi), as three staff users: an auditor (the trail, no
bodies, no restore, no export), a keeper (bodies and restore) and a superuser (export). One flow: the server fixture
serves one browser test per module."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from django.contrib.auth.models import Permission
from django.db import connection

from memory.lifecycle import memory_forget
from memory.models import Memory
from memory.save import memory_save
from palace.actors import Actor
from palace.models import OpLog, Palace
from tests.panel.browserkit import BROWSER_TEST, PASSWORD, shot

BODY = "The break-glass password lives in the red envelope"

pytestmark = BROWSER_TEST


def _staff(make_user: Any, name: str, *codenames: str, admin: bool = False) -> Any:
    user = make_user(name, admin=admin)
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return user


def _login(page: Any, base: str, username: str) -> None:
    page.context.clear_cookies()
    page.goto(f"{base}/admin/login/?next=/admin/palace/oplog/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/palace/oplog/")


def test_the_console_with_and_without_the_permissions(
    asgi_server: str,
    browser_page: Any,
    make_user: Any,
    alice: Any,
) -> None:
    from playwright.sync_api import expect

    connection.close()  # an earlier browser test's teardown may have ended this thread's connection
    personal = Palace.objects.get(personal_owner=alice)
    token = Actor.for_token(alice, 7, "rogue-agent")
    secret = memory_save(palace=personal, actor=Actor.for_user(alice), content=BODY, kind="fact").memory
    assert secret is not None
    memory_forget(memory_id=secret.pk, actor=token, reason="looked stale")
    junk = memory_save(palace=personal, actor=token, content="The moon is made of green cheese.", kind="fact").memory
    assert junk is not None
    _staff(make_user, "auditor", "view_oplog", "view_memory")
    _staff(make_user, "keeper", "view_oplog", "view_memory", "view_memory_body", "restore_memory")
    _staff(make_user, "root", admin=True)
    page, base = browser_page, asgi_server
    violations: list[str] = []  # the admin runs under the same Content-Security-Policy as the panel
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)

    # The auditor: filters work, the trail is there, no body, no restore, no export.
    _login(page, base, "auditor")
    page.get_by_role("link", name="forgetting / restore").click()
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("memory.forget")
    expect(rows.first).to_contain_text("rogue-agent")
    expect(rows.first).to_contain_text("status: active → forgotten")
    memory_box = page.locator("form.input-filter[data-filter=memory] input[name=memory]")
    memory_box.fill(str(secret.pk + 1000))
    memory_box.press("Enter")
    expect(page.locator("#result_list")).to_have_count(0)  # nothing about a memory that does not exist
    page.locator("form.input-filter[data-filter=memory] input[name=memory]").fill(str(secret.pk))
    page.locator("form.input-filter[data-filter=memory] input[name=memory]").press("Enter")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)  # the class filter is kept
    page.locator("form.input-filter[data-filter=actor] input[name=actor]").fill("token:7")
    page.locator("form.input-filter[data-filter=actor] input[name=actor]").press("Enter")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    expect(page.locator("a.export-csv")).to_have_count(0)
    expect(page.locator("a.revert-link")).to_have_count(0)
    expect(page.locator("a.bulk-restore")).to_have_count(0)
    shot(page, "console-auditor")
    page.locator("#result_list tbody tr").first.get_by_role("link", name=f"memory #{secret.pk}").click()
    page.wait_for_url(f"{base}/admin/memory/memory/{secret.pk}/full-history/")
    expect(page.locator("#versions")).to_contain_text(f"#{secret.pk}")
    expect(page.locator("#ops")).to_contain_text("memory.save")
    expect(page.locator(".bodies-hidden")).to_be_visible()
    assert BODY not in page.content()
    expect(page.locator("#restore-actions")).to_have_count(0)
    shot(page, "console-history-auditor")
    # A forged restore is refused by the server, not only hidden.
    csrf = page.locator("input[name=csrfmiddlewaretoken]").first.get_attribute("value")
    forged = page.request.post(
        f"{base}/admin/memory/memory/{secret.pk}/restore-memory/",
        form={"csrfmiddlewaretoken": csrf or "", "reason": "forged"},
    )
    assert forged.status == 403
    assert Memory.objects.get(pk=secret.pk).status == "forgotten"

    # The keeper: the body, and restore from the history with a reason.
    _login(page, base, "keeper")
    expect(page.locator("a.revert-link").first).to_be_visible()
    expect(page.locator("a.export-csv")).to_have_count(0)  # restore is not export
    page.goto(f"{base}/admin/memory/memory/{secret.pk}/full-history/")
    expect(page.locator("#versions")).to_contain_text(BODY)
    form = page.locator("form.restore-form")
    form.locator("input[name=reason]").fill("forgotten by a rogue agent")
    form.get_by_role("button", name="Restore this memory").click()
    expect(page.locator(".messagelist")).to_contain_text("restored")
    expect(page.locator("#memory-summary .status")).to_have_text("active")
    shot(page, "console-history-keeper")
    restored = OpLog.objects.filter(op="memory.restore", target_id=secret.pk).get()
    assert restored.actor_user_id is not None and restored.reason == "forgotten by a rogue agent"
    # Bulk: everything the token did today, previewed, then applied with a reason.
    page.goto(f"{base}/admin/palace/oplog/")
    page.locator("a.bulk-restore").click()
    today = restored.created_at.date().isoformat()
    page.fill("#id_actor", "token:7")
    page.fill("#id_since", today)
    page.fill("#id_until", today)
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#bulk-changes")).to_contain_text(f"forget memory #{junk.pk}")
    expect(page.locator("#bulk-refused")).to_contain_text("is active now")  # its forget, already restored above
    assert Memory.objects.get(pk=junk.pk).status == "active"
    page.fill("#bulk-reason", "the rogue agent's writes")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#bulk-result")).to_contain_text("1 reverted")
    shot(page, "console-bulk")
    assert Memory.objects.get(pk=junk.pk).status == "forgotten"
    assert Memory.objects.get(pk=secret.pk).status == "active"

    # The superuser exports the filtered trail.
    _login(page, base, "root")
    page.goto(f"{base}/admin/palace/oplog/?actor=token:7")
    with page.expect_download() as download:
        page.locator("a.export-csv").click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    table = list(csv.DictReader(io.StringIO(text)))
    assert [r["op"] for r in table] == ["memory.save", "memory.forget"]  # the token's rows, newest first
    assert all(r["actor"].endswith("rogue-agent (#7)") for r in table)
    assert BODY not in text
    assert violations == []
