"""The audit console's table fits the window at 1440 px (issue 26: the actor column wrapped to six lines, the table
ran past the window, 82 rows made an 8,934 px page): Chromium measures the table against its box, with the
console's stylesheet and, as the control, without it."""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction

from palace.actors import Actor
from palace.models import Palace
from palace.oplog import oplog_write
from tests.panel.browserkit import BROWSER_TEST, PASSWORD, shot

pytestmark = BROWSER_TEST

ROWS = 82
LABEL = "alice-laptop claude-code opus long-running refactoring agent"
REASON = "agent note about the webhook_secret_next rotation and where checkout/prod.tfstate lives now " * 3
MEASURE = """() => {
  const table = document.querySelector('#result_list');
  const actor = document.querySelector('#result_list tbody td.field-actor [title]');
  const root = document.documentElement;
  return {table: table.scrollWidth, box: table.parentElement.clientWidth, window: root.clientWidth,
          page: root.scrollWidth, height: root.scrollHeight,
          actor: actor.getBoundingClientRect().height, title: actor.getAttribute('title')};
}"""


def test_the_console_table_fits_at_1440(asgi_server: str, chromium: Any, make_user: Any, alice: Any) -> None:
    connection.close()  # an earlier browser test's teardown may have ended this thread's connection
    make_user("root", admin=True)
    personal = Palace.objects.get(personal_owner=alice)
    token = Actor.for_token(alice, 7, LABEL)
    for n in range(ROWS):
        with transaction.atomic():
            oplog_write(
                op="memory.save",
                actor=token,
                palace=personal,
                target_kind="memory",
                target_id=n + 1,
                reason=REASON,
                detail={"linked": list(range(40)), "content": "x" * 200},
            )
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{asgi_server}/admin/login/?next=/admin/palace/oplog/")
        page.fill("#id_username", "root")
        page.fill("#id_password", PASSWORD)
        page.click("input[type=submit]")
        page.wait_for_url(f"{asgi_server}/admin/palace/oplog/")
        assert page.locator("#result_list tbody tr").count() >= ROWS
        fitted = page.evaluate(MEASURE)
        shot(page, "console-1440")
        # The control: the same page without the console's stylesheet overflows as it did.
        page.evaluate("() => document.querySelector(\"link[href*='css/console.css']\").remove()")
        bare = page.evaluate(MEASURE)
    finally:
        context.close()
    assert fitted["table"] <= fitted["box"] and fitted["page"] <= fitted["window"], fitted
    assert fitted["actor"] < 30 and fitted["title"] == f"alice via token {LABEL} (#7)", (
        fitted
    )  # one line, whole on hover
    assert fitted["height"] < ROWS * 80, fitted  # about three lines a row at most, not 8,934 px
    assert bare["table"] > bare["box"] or bare["height"] > fitted["height"] * 2, bare
