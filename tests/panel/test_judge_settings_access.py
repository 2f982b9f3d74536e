"""The panel's judge settings card (/judge/, /judge/settings/, /judge/test/) through a logged-in session, attacked
as issue 24 found it: a staff account without permissions saw, saved and tested the settings, and the test sent the
stored key to a typed URL. Each refusal has its positive control in the same test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission

from memory.judge import judge_settings_update
from memory.models import JudgeSettings
from palace.actors import Actor
from tests.fakes.openai_server import CHAT_PATH, FakeOpenAI, chat_json, raw_body

KEY = "sk-panel-stored-key-0123456789-qrst"
SECRET = "sk-REMOTE-SECRET-panel-eeeeffff"


def grant(user: Any, *codenames: str) -> Any:
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="memory", codename__in=codenames))
    return type(user).objects.get(pk=user.pk)


@pytest.fixture
def staff(make_user: Callable[..., Any]) -> Callable[[str], Any]:
    def make(name: str) -> Any:
        user = make_user(name)
        user.is_staff = True
        user.save(update_fields=["is_staff"])
        return user

    return make


@pytest.fixture
def fake(make_user: Callable[..., Any]) -> Iterator[FakeOpenAI]:
    """The judge on at this fake server, KEY stored."""
    with FakeOpenAI() as server:
        root = Actor.for_user(make_user("root", admin=True))
        judge_settings_update(
            actor=root, enabled=True, base_url=server.base_url, model="judge-p", timeout_ms=2000, api_key=KEY
        )
        yield server


def _form(url: str, **extra: str) -> dict[str, str]:
    return {"enabled": "on", "base_url": url, "model": "judge-p", "timeout_ms": "2000", "api_key": "", **extra}


def test_staff_without_the_permissions_gets_no_card_and_403_and_a_granted_user_does(
    staff: Callable[[str], Any], client_for: Callable[[Any], Any], fake: FakeOpenAI
) -> None:
    mallory = client_for(staff("mallory"))
    assert 'id="judge-settings"' not in mallory.get("/judge/").content.decode()
    assert mallory.post("/judge/settings/", _form(fake.base_url, model="mine", api_key="sk-m")).status_code == 403
    assert mallory.post("/judge/test/", _form(fake.base_url)).status_code == 403
    assert fake.requests == [] and JudgeSettings.objects.get().model == "judge-p"

    # The view permission shows the card read-only: no Save, no Test connection, and a save is still refused.
    vera = client_for(grant(staff("vera"), "view_judgesettings"))
    page = vera.get("/judge/").content.decode()
    assert 'id="judge-settings"' in page and 'class="plain" disabled' in page and KEY not in page
    assert "Test connection" not in page
    assert vera.post("/judge/settings/", _form(fake.base_url, model="mine", api_key="sk-m")).status_code == 403

    # Positive control: the change permission saves and tests.
    carl = client_for(grant(staff("carl"), "change_judgesettings"))
    page = carl.get("/judge/").content.decode()
    assert 'class="plain" disabled' not in page and "Test connection" in page
    fake.script_chat([chat_json({"same": 1.0, "contradicts": 0.0, "reason": "same"})])
    tested = carl.post("/judge/test/", _form(fake.base_url)).content.decode()
    assert "Reachable: judge-p answered in" in tested and "Sent the stored key." in tested and KEY not in tested
    assert carl.post("/judge/settings/", _form(fake.base_url, model="mine")).status_code == 302
    assert JudgeSettings.objects.get().model == "mine"


def test_the_panels_test_never_sends_the_stored_key_elsewhere_nor_shows_the_reply(
    make_user: Callable[..., Any], client_for: Callable[[Any], Any], fake: FakeOpenAI
) -> None:
    admin = client_for(make_user("admin2", admin=True))
    with FakeOpenAI() as listener:
        listener.script_chat([raw_body(f"denied {SECRET}", status=401)])
        page = admin.post("/judge/test/", _form(listener.base_url)).content.decode()
        assert "Sent no key." in page and "LLM endpoint answered HTTP 401" in page and SECRET not in page
        assert "authorization" not in listener.requests_to(CHAT_PATH)[0].headers
    # Positive control: the stored endpoint gets the stored key.
    fake.script_chat([chat_json({"same": 1.0, "contradicts": 0.0, "reason": "same"})])
    assert "Sent the stored key." in admin.post("/judge/test/", _form(fake.base_url)).content.decode()
    assert fake.requests_to(CHAT_PATH)[0].headers["authorization"] == f"Bearer {KEY}"


def test_the_panel_refuses_an_internal_endpoint_unless_allowed(
    make_user: Callable[..., Any], client_for: Callable[[Any], Any], settings: Any
) -> None:
    admin = client_for(make_user("admin3", admin=True))
    form = _form("http://169.254.169.254/latest", api_key="sk-k")
    settings.ATRIUM_LLM_ALLOWED_HOSTS = []
    response = admin.post("/judge/settings/", form)
    assert response.status_code == 422 and "169.254.169.254 is a link-local address" in response.content.decode()
    assert not JudgeSettings.objects.filter(base_url="http://169.254.169.254/latest").exists()
    settings.ATRIUM_LLM_ALLOWED_HOSTS = ["169.254.169.254"]  # positive control: the operator allows it
    assert admin.post("/judge/settings/", form).status_code == 302
    assert JudgeSettings.objects.get().base_url == "http://169.254.169.254/latest"
