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


def test_staff_without_the_judge_permissions_is_refused_and_a_granted_user_is_not(
    make_user: Callable[..., Any], client_for: Callable[[Any], Any]
) -> None:
    """Issue 24: the admin door checks the same permissions as REST and the panel (memory.judge.config)."""
    from django.contrib.auth.models import Permission

    def staff(name: str, *codenames: str) -> Any:
        user = make_user(name)
        user.is_staff = True
        user.save(update_fields=["is_staff"])
        user.user_permissions.add(*Permission.objects.filter(content_type__app_label="memory", codename__in=codenames))
        return client_for(user)

    form = {"enabled": "", "base_url": "http://127.0.0.1:9/v1", "model": "judge", "timeout_ms": "3000"}
    mallory = staff("mallory")
    assert mallory.get("/admin/memory/judgesettings/").status_code == 403
    assert mallory.post("/admin/memory/judgesettings/add/", {**form, "reason": "mine now"}).status_code == 403
    assert not JudgeSettings.objects.exists()
    vera = staff("vera", "view_judgesettings")
    assert vera.get("/admin/memory/judgesettings/").status_code == 200
    assert vera.post("/admin/memory/judgesettings/add/", {**form, "reason": "mine now"}).status_code == 403
    assert not JudgeSettings.objects.exists()
    # Positive control: the change permission adds and changes (through the service, with its op row).
    carl = staff("carl", "change_judgesettings")
    response = carl.post("/admin/memory/judgesettings/add/", {**form, "api_key": KEY, "reason": "set up"})
    assert response.status_code == 302, response.content.decode()[:2000]
    row = JudgeSettings.objects.get()
    assert row.base_url == "http://127.0.0.1:9/v1" and OpLog.objects.filter(op="judge.settings").count() == 1
    assert mallory.get(f"/admin/memory/judgesettings/{row.pk}/change/").status_code == 403
    changed = {**form, "model": "other", "reason": "rename"}
    assert mallory.post(f"/admin/memory/judgesettings/{row.pk}/change/", changed).status_code == 403
    assert vera.post(f"/admin/memory/judgesettings/{row.pk}/change/", changed).status_code == 403
    assert JudgeSettings.objects.get().model == "judge"
    assert carl.post(f"/admin/memory/judgesettings/{row.pk}/change/", changed).status_code == 302
    assert JudgeSettings.objects.get().model == "other"


def test_the_admin_form_refuses_an_internal_endpoint_and_a_key_moved_to_another(
    make_user: Callable[..., Any], client_for: Callable[[Any], Any], settings: Any
) -> None:
    client = client_for(make_user("root", admin=True))
    form = {"enabled": "on", "model": "judge", "timeout_ms": "3000", "reason": "audit test"}
    response = client.post(
        "/admin/memory/judgesettings/add/", {**form, "base_url": "http://127.0.0.1:9/v1", "api_key": KEY}
    )
    assert response.status_code == 302
    row = JudgeSettings.objects.get()
    settings.ATRIUM_LLM_ALLOWED_HOSTS = []
    page = client.post(
        f"/admin/memory/judgesettings/{row.pk}/change/", {**form, "base_url": "http://10.1.1.1/v1", "api_key": "sk-new"}
    )
    assert page.status_code == 200 and "10.1.1.1 is a private address" in page.content.decode()
    settings.ATRIUM_LLM_ALLOWED_HOSTS = ["127.0.0.1", "10.1.1.1"]
    page = client.post(f"/admin/memory/judgesettings/{row.pk}/change/", {**form, "base_url": "http://10.1.1.1/v1"})
    assert page.status_code == 200 and "enter the key again" in page.content.decode()
    assert JudgeSettings.objects.get().base_url == "http://127.0.0.1:9/v1"
    # Positive control: the new endpoint with its key.
    moved = {**form, "base_url": "http://10.1.1.1/v1", "api_key": "sk-new"}
    assert client.post(f"/admin/memory/judgesettings/{row.pk}/change/", moved).status_code == 302
    assert JudgeSettings.objects.get().base_url == "http://10.1.1.1/v1"
