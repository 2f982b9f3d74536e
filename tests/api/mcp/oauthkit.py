"""The OAuth sign-in as a client and its person do it, at the protocol level through Django's test client: register
(RFC 7591), ask (the authorization request), answer on the consent page, exchange the code (PKCE). Shared by the
OAuth tests here and the Tokens page's (tests/panel); not a test module."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.test import Client

BASE = "http://testserver"
RESOURCE = f"{BASE}/mcp"
REDIRECT = "http://127.0.0.1:9/callback"
INITIALIZE_BODY = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def register(name: str = "Test agent", redirect_uris: list[str] | None = None) -> str:
    metadata = {
        "client_name": name,
        "redirect_uris": redirect_uris or [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    response = Client().post("/oauth/register/", data=json.dumps(metadata), content_type="application/json")
    assert response.status_code == 201, response.content
    return str(response.json()["client_id"])


def ask(browser: Client, client_id: str, challenge: str, **changes: Any) -> Any:
    """The authorization request as a client's browser sends it; the consent page (or the toolkit's answer)."""
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "st-1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "scope": "memory.read memory.write",
        "resource": RESOURCE,
        **changes,
    }
    return browser.get("/oauth/authorize/", {k: v for k, v in params.items() if v is not None})


def answer(browser: Client, page: Any, *, allow: bool = True, **fields: str) -> dict[str, list[str]]:
    """Approve or deny on the consent page; the query of the redirect back to the client."""
    assert page.status_code == 200, page.content
    form = {k: v for k, v in page.context["form"].initial.items() if v is not None}
    response = browser.post("/oauth/authorize/", {**form, **fields, **({"allow": "yes"} if allow else {})})
    assert response.status_code == 302, response.content
    location = response["Location"]
    assert location.startswith(REDIRECT)
    return parse_qs(urlsplit(location).query)


def exchange(client_id: str, code: str, verifier: str, **changes: str) -> Any:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": client_id,
        "code_verifier": verifier,
        "resource": RESOURCE,
        **changes,
    }
    return Client().post("/oauth/token/", data)


def sign_in(user: Any, client_for: Any, client_id: str | None = None, **fields: str) -> tuple[str, dict[str, Any]]:
    """The whole flow for `user` (a new client unless `client_id` names a registered one): (client_id, the token
    response)."""
    browser = client_for(user)
    client_id = client_id or register()
    verifier, challenge = pkce()
    code = answer(browser, ask(browser, client_id, challenge), **fields)["code"][0]
    response = exchange(client_id, code, verifier)
    assert response.status_code == 200, response.content
    return client_id, response.json()
