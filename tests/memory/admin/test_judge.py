"""The judge settings in the Django admin: saved through the service, the key never in the page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory.judge import judge_config
from memory.models import JudgeSettings
from palace.models import OpLog

KEY = "sk-admin-key-0123456789-tail"


def test_admin_saves_through_the_service_and_never_shows_the_key(
    make_user: Callable[..., Any], client_for: Callable[[Any], Any], alice: Any
) -> None:
    client = client_for(make_user("root", admin=True))
    form = {
        "enabled": "on",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "judge",
        "timeout_ms": "3000",
        "reason": "audit test",
    }
    response = client.post("/admin/memory/judgesettings/add/", {**form, "api_key": KEY})
    assert response.status_code == 302, response.content.decode()[:2000]
    row = JudgeSettings.objects.get()
    assert row.enabled and KEY not in row.api_key_encrypted and judge_config().llm is not None
    assert OpLog.objects.filter(op="judge.settings").count() == 1
    page = client.get(f"/admin/memory/judgesettings/{row.pk}/change/").content.decode()
    assert KEY not in page and "tail" in page  # only the mask's last 4 characters
    # An empty key field keeps the key; the row is not back-filled with it.
    assert client.post(f"/admin/memory/judgesettings/{row.pk}/change/", {**form, "api_key": ""}).status_code == 302
    assert judge_config().llm is not None and judge_config().llm.api_key == KEY  # type: ignore[union-attr]
    # The admin's own op rows (palace/admin_site.py) record that the key changed, never the key.
    audit = list(OpLog.objects.filter(op__in=["admin.add", "admin.change"]).values_list("detail", flat=True))
    assert len(audit) == 2 and audit[0]["changed"]["api_key"]["after"] == "(secret, not recorded)"
    assert KEY not in str(audit)
    # A member who is not an admin cannot reach it (positive control above).
    assert client_for(alice).get(f"/admin/memory/judgesettings/{row.pk}/change/").status_code == 302
