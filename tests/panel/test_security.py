"""Login throttling (django-axes) on /login/ and /admin/login/, the security headers (CSP, HSTS, nosniff), and
secure cookies and HSTS derived from ATRIUM_PUBLIC_URL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
RIGHT = "correct-horse-9"  # the personas' password (tests/conftest.py)


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("url", ["/login/", "/admin/login/"])
def test_sixth_try_is_refused_even_with_the_right_password(url: str, make_user: Any) -> None:
    make_user("alice", admin=True)
    make_user("bob", admin=True)
    client = Client()
    for attempt in range(1, 6):
        response = client.post(url, {"username": "alice", "password": "wrong-guess"})
        # the form again with its error, and at the fifth failure the lockout notice
        assert response.status_code == (429 if attempt == 5 else 200) and not logged_in(client)
    locked = client.post(url, {"username": "alice", "password": RIGHT})
    assert locked.status_code == 429 and not logged_in(client)
    assert "locked" in locked.content.decode().lower()
    # another user from the same address is not locked out (the positive control)
    other = Client()
    assert other.post(url, {"username": "bob", "password": RIGHT}).status_code == 302 and logged_in(other)


def test_fewer_failures_then_the_right_password_logs_in_and_resets(make_user: Any) -> None:
    make_user("alice")
    client = Client()
    for _ in range(4):
        client.post("/login/", {"username": "alice", "password": "wrong-guess"})
    assert client.post("/login/", {"username": "alice", "password": RIGHT}).status_code == 302
    assert logged_in(client)
    client.logout()
    for _ in range(4):  # the success reset the count: four more failures still leave alice able to log in
        client.post("/login/", {"username": "alice", "password": "wrong-guess"})
    assert client.post("/login/", {"username": "alice", "password": RIGHT}).status_code == 302


def test_the_lockout_ends_after_the_cool_off(make_user: Any) -> None:
    import time_machine
    from django.utils import timezone

    make_user("alice")
    client = Client()
    for _ in range(6):
        client.post("/login/", {"username": "alice", "password": "wrong-guess"})
    assert client.post("/login/", {"username": "alice", "password": RIGHT}).status_code == 429
    with time_machine.travel(timezone.now() + timezone.timedelta(minutes=16)):
        assert client.post("/login/", {"username": "alice", "password": RIGHT}).status_code == 302


def test_panel_pages_carry_csp_and_no_inline_code(alice: Any, client_for: Any) -> None:
    client = client_for(alice)
    for url in ["/login/", "/today/", "/palace/", "/tokens/", "/admin/login/"]:
        response = (client if "login" not in url else Client()).get(url)
        assert response.status_code == 200, url
        csp = response["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert response["X-Content-Type-Options"] == "nosniff"
    html = client.get("/tokens/").content.decode() + client.get("/palace/").content.decode()
    assert " onclick=" not in html and "<script>" not in html and " style=" not in html


def test_hsts_on_https_requests_when_configured(alice: Any, client_for: Any, settings: Any) -> None:
    settings.SECURE_HSTS_SECONDS = 31_536_000
    client = client_for(alice)
    assert client.get("/today/", secure=True)["Strict-Transport-Security"] == "max-age=31536000"
    assert "Strict-Transport-Security" not in client.get("/today/")  # plain http: browsers ignore it anyway


def settings_with(**env: str) -> dict[str, Any]:
    names = ["SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS", "SECURE_PROXY_SSL_HEADER"]
    code = f"import json, config.settings as s; print(json.dumps({{n: getattr(s, n, None) for n in {names!r}}}))"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_") or k == "ATRIUM_HOME"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=clean | env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_https_public_url_makes_cookies_secure_and_turns_on_hsts() -> None:
    https = settings_with(ATRIUM_PUBLIC_URL="https://atrium.example.com")
    assert https["SESSION_COOKIE_SECURE"] is True and https["CSRF_COOKIE_SECURE"] is True
    assert https["SECURE_HSTS_SECONDS"] == 31_536_000 and https["SECURE_PROXY_SSL_HEADER"] is None
    local = settings_with(ATRIUM_PUBLIC_URL="http://127.0.0.1:8000")  # the control: plain http stays usable
    assert local["SESSION_COOKIE_SECURE"] is False and local["SECURE_HSTS_SECONDS"] == 0
    assert settings_with()["SESSION_COOKIE_SECURE"] is False
    opted_out = settings_with(ATRIUM_PUBLIC_URL="https://a.example", ATRIUM_SECURE_COOKIES="false")
    assert opted_out["SESSION_COOKIE_SECURE"] is False
    proxied = settings_with(ATRIUM_TRUST_X_FORWARDED_PROTO="true")
    assert proxied["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


def test_api_docs_reference_no_external_host(alice: Any, client_for: Any) -> None:
    import re

    page = client_for(alice).get("/api/v1/docs")
    assert page.status_code == 200
    html = page.content.decode()
    assert re.findall(r"""(?:src|href)=["']([^"']+)""", html), "the page loads its assets"
    assert not re.findall(r"""(?:src|href)=["'](?:https?:)?//""", html), html
    assert "/static/ninja/swagger-ui-bundle" in html
    assert client_for(alice).get("/static/ninja/swagger-ui-bundle.js").status_code == 200
