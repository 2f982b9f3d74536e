"""The Palace view's export link in Chromium against uvicorn: clicking it downloads the viewer's own export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.db import connection

from palace.models import Palace
from tests.ops.portability.world import build_world
from tests.panel.browserkit import BROWSER_TEST, PASSWORD

pytestmark = BROWSER_TEST


def test_the_export_link_downloads_what_the_viewer_may_read(
    asgi_server: str,
    browser_page: Any,
    make_user: Any,
    tmp_path: Path,
) -> None:
    connection.close()  # a browser test before this one may have ended this thread's session (see the judge test)
    erin = make_user("erin")
    build_world(erin, Palace.objects.get(personal_owner=erin))
    make_user("frank")  # another person, whose palace must not be in erin's export
    page, base = browser_page, asgi_server
    page.goto(f"{base}/login/")
    page.fill("#id_username", "erin")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/today/")
    page.goto(f"{base}/palace/")
    with page.expect_download() as info:
        page.locator("nav.exports").get_by_role("link", name="JSON (lossless)").click()
    target = tmp_path / "export.json"
    info.value.save_as(target)
    document = json.loads(target.read_text())
    assert [p["owner"] for p in document["palaces"]] == ["erin"]
    assert len(document["palaces"][0]["memories"]) == 4
