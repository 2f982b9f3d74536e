"""REST door to the judge's settings, attacked the way issue 24 found it: a staff account with no permissions
(mallory) read, changed and tested them; a read token ran the test; the test sent the stored key to a typed URL;
an internal URL was accepted; and the endpoint's reply came back in errors, hints and stored rulings. Each attack
is refused, with a positive control in the same test."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from memory.models import Adjudication, JudgeSettings
from palace.models import OpLog, Palace
from tests.fakes.openai_server import CHAT_PATH, FakeOpenAI, chat_json, raw_body

KEY = "sk-stored-judge-key-0123456789-wxyz"
SECRET = "sk-REMOTE-SECRET-aaaabbbbccccdddd"


def _call(raw_token: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {raw_token}"}
    if body is None:
        r = getattr(Client(), method)(path, **headers)
    else:
        r = getattr(Client(), method)(path, json.dumps(body), content_type="application/json", **headers)
    return r.status_code, r.json()


def grant(user: Any, *codenames: str) -> Any:
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="memory", codename__in=codenames))
    return type(user).objects.get(pk=user.pk)  # a fresh object: Django caches permissions per instance


@pytest.fixture
def staff(make_user: Callable[..., Any]) -> Callable[[str], Any]:
    def make(name: str) -> Any:
        user = make_user(name)
        user.is_staff = True
        user.save(update_fields=["is_staff"])
        return user

    return make


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def stored(make_user: Callable[..., Any], token_for: Callable[..., str], fake: FakeOpenAI) -> FakeOpenAI:
    """The judge on, at `fake`, with KEY stored (by a superuser)."""
    body = {"enabled": True, "base_url": fake.base_url, "model": "judge-1", "timeout_ms": 2000, "api_key": KEY}
    assert _call(token_for(make_user("root", admin=True)), "put", "/api/v1/judge/settings", body)[0] == 200
    return fake


def test_staff_without_the_permissions_is_refused_and_a_granted_user_is_not(
    staff: Callable[[str], Any], token_for: Callable[..., str], stored: FakeOpenAI
) -> None:
    mallory = staff("mallory")
    token = token_for(mallory)
    body = {"enabled": True, "base_url": stored.base_url, "model": "mine", "timeout_ms": 2000, "api_key": "sk-m"}
    test = {"base_url": stored.base_url, "model": "judge-1"}
    assert _call(token, "get", "/api/v1/judge/settings")[0] == 403
    status, refused = _call(token, "put", "/api/v1/judge/settings", body)
    assert status == 403 and "memory.change_judgesettings" in refused["error"]["message"]
    assert _call(token, "post", "/api/v1/judge/test", test)[0] == 403
    assert stored.requests == [] and JudgeSettings.objects.get().model == "judge-1"
    assert OpLog.objects.filter(op="judge.settings").count() == 1  # only root's

    # The view permission reads, and no more.
    viewer = grant(staff("vera"), "view_judgesettings")
    status, shown = _call(token_for(viewer), "get", "/api/v1/judge/settings")
    assert status == 200 and shown["model"] == "judge-1" and KEY not in json.dumps(shown)
    assert _call(token_for(viewer), "put", "/api/v1/judge/settings", body)[0] == 403
    assert _call(token_for(viewer), "post", "/api/v1/judge/test", test)[0] == 403

    # Positive control: the change permission reads, changes and tests.
    grant(mallory, "change_judgesettings")
    assert _call(token, "get", "/api/v1/judge/settings")[0] == 200
    stored.script_chat([chat_json({"same": 1.0, "contradicts": 0.0, "reason": "same"})])
    status, report = _call(token, "post", "/api/v1/judge/test", test)
    assert status == 200 and report["reachable"] and report["key"] == "stored"
    status, shown = _call(token, "put", "/api/v1/judge/settings", body)
    assert status == 200 and shown["model"] == "mine"
    assert JudgeSettings.objects.get().model == "mine"


def test_the_connection_test_needs_a_write_token(
    make_user: Callable[..., Any], token_for: Callable[..., str], stored: FakeOpenAI
) -> None:
    root = make_user("admin2", admin=True)
    test = {"base_url": stored.base_url, "model": "judge-1"}
    status, refused = _call(token_for(root, scope="read"), "post", "/api/v1/judge/test", test)
    assert status == 403 and "read scope" in refused["error"]["message"]
    assert stored.requests_to(CHAT_PATH) == []  # the stored key went nowhere
    stored.script_chat([chat_json({"same": 1.0, "contradicts": 0.0, "reason": "same"})])
    status, report = _call(token_for(root, scope="write"), "post", "/api/v1/judge/test", test)
    assert status == 200 and report["reachable"]
    assert stored.requests_to(CHAT_PATH)[0].headers["authorization"] == f"Bearer {KEY}"


def test_the_stored_key_is_never_sent_to_another_url(
    make_user: Callable[..., Any], token_for: Callable[..., str], stored: FakeOpenAI
) -> None:
    token = token_for(make_user("admin3", admin=True))
    with FakeOpenAI() as listener:  # the attacker's listener, on loopback like the one in the report
        listener.script_chat([chat_json({"same": 1.0, "contradicts": 0.0, "reason": "same"})])
        status, report = _call(token, "post", "/api/v1/judge/test", {"base_url": listener.base_url, "model": "x"})
        assert status == 200 and report["key"] == "none"
        received = listener.requests_to(CHAT_PATH)
        assert len(received) == 1 and "authorization" not in received[0].headers
        assert KEY not in json.dumps([r.headers for r in listener.requests]) + str([r.body for r in received])
        # Saving the other URL without typing the key again is refused, so the key cannot follow it either.
        body = {"enabled": True, "base_url": listener.base_url, "model": "x", "timeout_ms": 2000}
        status, refused = _call(token, "put", "/api/v1/judge/settings", body)
        assert status == 422 and "enter the key again" in refused["error"]["message"]
        assert JudgeSettings.objects.get().base_url == stored.base_url
    # Positive control: the stored URL (a trailing slash is the same endpoint) gets the stored key.
    stored.script_chat([chat_json({"same": 1.0, "contradicts": 0.0, "reason": "same"})])
    status, report = _call(token, "post", "/api/v1/judge/test", {"base_url": stored.base_url + "/", "model": "x"})
    assert status == 200 and report["key"] == "stored"
    assert stored.requests_to(CHAT_PATH)[0].headers["authorization"] == f"Bearer {KEY}"
    # A typed key goes to the typed URL, and a new URL is saved with its key.
    with FakeOpenAI() as other:
        other.script_chat([chat_json({"same": 1.0, "contradicts": 0.0, "reason": "same"})])
        test = {"base_url": other.base_url, "model": "x", "api_key": "sk-typed"}
        assert _call(token, "post", "/api/v1/judge/test", test)[1]["key"] == "typed"
        assert other.requests_to(CHAT_PATH)[0].headers["authorization"] == "Bearer sk-typed"
        body = {"enabled": True, "base_url": other.base_url, "model": "x", "timeout_ms": 2000, "api_key": "sk-new"}
        assert _call(token, "put", "/api/v1/judge/settings", body)[0] == 200


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://127.0.0.1:9/v1", "127.0.0.1 is a loopback address"),
        ("http://169.254.169.254/latest/meta-data", "169.254.169.254 is a link-local address"),
        ("http://10.0.0.8/v1", "10.0.0.8 is a private address"),
        ("http://[fd00::8]/v1", "fd00::8 is a unique-local address"),
        ("http://0.0.0.0:8000/v1", "0.0.0.0 is a unspecified address"),
        ("http://user:pw@8.8.8.8/v1", "user name or password"),
        ("https://8.8.8.8/v1?path=/steal", "query"),
        ("https://8.8.8.8/v1#/steal", "fragment"),
    ],
)
def test_an_internal_or_malformed_endpoint_is_a_422_with_what_to_send(
    make_user: Callable[..., Any], token_for: Callable[..., str], settings: Any, url: str, words: str
) -> None:
    settings.ATRIUM_LLM_ALLOWED_HOSTS = []
    token = token_for(make_user("admin4", admin=True))
    body = {"enabled": True, "base_url": url, "model": "m", "timeout_ms": 2000, "api_key": "sk-k"}
    status, refused = _call(token, "put", "/api/v1/judge/settings", body)
    assert status == 422 and words in refused["error"]["message"], refused
    status, refused = _call(token, "post", "/api/v1/judge/test", {"base_url": url, "model": "m", "api_key": "k"})
    assert status == 422 and words in refused["error"]["message"]
    assert JudgeSettings.objects.filter(base_url=url).count() == 0
    # Positive control: the operator's allow-list names the network (the form rules still hold).
    settings.ATRIUM_LLM_ALLOWED_HOSTS = ["0.0.0.0/0", "::/0"]
    status, _ = _call(token, "put", "/api/v1/judge/settings", body)
    assert status == (422 if words in ("user name or password", "query", "fragment") else 200)


def test_the_endpoints_reply_never_reaches_errors_hints_or_stored_rulings(
    make_user: Callable[..., Any],
    token_for: Callable[..., str],
    stored: FakeOpenAI,
    alice: Any,
) -> None:
    token = token_for(make_user("admin5", admin=True))
    stored.script_chat([raw_body(f"internal error, key={SECRET}", status=500)])
    status, report = _call(token, "post", "/api/v1/judge/test", {"base_url": stored.base_url, "model": "judge-1"})
    assert status == 200 and not report["reachable"]
    assert report["error"] == "failed: LLMHTTPError: LLM endpoint answered HTTP 500"
    assert SECRET not in json.dumps(report)

    alice_token = token_for(alice)
    assert _call(alice_token, "post", "/api/v1/memories", {"content": "The API server listens on port 8000."})[0] == 201
    stored.script_chat([raw_body(f"<html>{SECRET}</html>", status=500)])
    status, saved = _call(alice_token, "post", "/api/v1/memories", {"content": "The API server listens on port 8001."})
    assert status == 201 and saved["disposition"] == "defer"
    assert "judged by the rules (failed)" in saved["hint"] and "HTTP 500" in saved["hint"]
    assert SECRET not in json.dumps(saved)
    ruling = Adjudication.objects.get(palace=Palace.objects.get(personal_owner=alice))
    assert ruling.fallback_reason == "failed" and "HTTP 500" in ruling.reason
    stored_text = json.dumps([getattr(ruling, f.attname) for f in Adjudication._meta.concrete_fields], default=str)
    assert SECRET not in stored_text
    status, rows = _call(alice_token, "get", "/api/v1/judge/adjudications")
    assert status == 200 and len(rows) == 1 and SECRET not in json.dumps(rows)
    # A 200 that is not JSON, or a refusal, is reported the same way: by what it is, not by what it says.
    stored.script_chat([raw_body(f"not json {SECRET}", status=200)])
    status, report = _call(token, "post", "/api/v1/judge/test", {"base_url": stored.base_url, "model": "judge-1"})
    assert "LLMBadResponseError" in report["error"] and SECRET not in json.dumps(report)
