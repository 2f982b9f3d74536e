"""The OAuth sign-in as a client does it: the official Python MCP client's OAuthClientProvider against uvicorn
serving config.asgi, starting from the 401 (discovery, dynamic registration), the person signing in and approving
on the consent page in Chromium, the token exchange, then tools/list, a save and a search as that person; the
access token then expires and the provider refreshes it; a revoked token stops working on the next call."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from django.utils import timezone
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from oauth2_provider.models import AccessToken, Application, RefreshToken
from pydantic import AnyUrl

from accounts.models import ApiToken
from memory.models import Memory
from palace.models import OpLog
from palace.selectors import palace_get
from tests.panel.browserkit import CHROMIUM, PASSWORD, free_port, require_chromium

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous iterators"),
]
CLIENT_NAME = "Atrium e2e agent"
# Short enough to wait for, long enough that the calls right after the exchange use the first token.
ACCESS_SECONDS = 8
FACT = ("The nightly export lands in bucket heron-archive.", "where does the nightly export land")


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Person:
    """Chromium as the person: follows the authorization URL, signs in, approves; the redirect back to the client's
    loopback callback is caught in the browser and handed to the provider."""

    def __init__(self, page: Any, username: str, callback: str) -> None:
        self.page, self.username, self.callback = page, username, callback
        self.arrived: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.consent_text = ""
        self.asked = 0

    async def start(self) -> None:
        async def caught(route: Any) -> None:
            if not self.arrived.done():
                self.arrived.set_result(route.request.url)
            await route.fulfill(status=200, content_type="text/plain", body="You can close this window.")

        await self.page.route(f"{self.callback}**", caught)

    async def redirect_handler(self, url: str) -> None:
        self.asked += 1
        await self.page.goto(url)
        if await self.page.locator("#id_username").count():  # signed out: the login page first
            await self.page.fill("#id_username", self.username)
            await self.page.fill("#id_password", PASSWORD)
            await self.page.click("button[type=submit]")
        await self.page.wait_for_selector("#consent-form")
        self.consent_text = await self.page.inner_text("#oauth-consent")
        await self.page.click("#consent-approve")

    async def callback_handler(self) -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(await asyncio.wait_for(self.arrived, 60)).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])


async def _until(check: Any, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not await asyncio.to_thread(check):
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.1)


async def _sign_in_and_work(base: str, username: str) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    callback = f"http://127.0.0.1:{free_port()}/callback"
    out: dict[str, Any] = {}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = await (await browser.new_context(locale="en-US")).new_page()
        person = Person(page, username, callback)
        await person.start()
        storage = MemoryStorage()
        provider = OAuthClientProvider(
            server_url=f"{base}/mcp",
            client_metadata=OAuthClientMetadata(
                client_name=CLIENT_NAME,
                redirect_uris=[AnyUrl(callback)],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=storage,
            redirect_handler=person.redirect_handler,
            callback_handler=person.callback_handler,
        )
        async with (
            httpx2.AsyncClient(auth=provider, timeout=60) as http,
            Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,  # type: ignore[arg-type]
        ):
            out["names"] = {t.name for t in (await client.list_tools()).tools}
            out["saved"] = await client.call_tool("memory_save", {"content": FACT[0], "kind": "fact"})
            out["found"] = await client.call_tool("memory_search", {"query": FACT[1]})
            out["consent"] = person.consent_text
            assert storage.tokens is not None
            out["first"] = storage.tokens.model_copy()
            out["asked"] = person.asked
            # The access token runs out (ACCESS_SECONDS here): the provider refreshes it before the next call once
            # both sides agree the token ran out: the server's row, and the provider's own clock (else it would send
            # the old token once more, get a 401 and start a new sign-in instead of refreshing).
            await _until(
                lambda: (
                    not provider.context.is_token_valid()
                    and not AccessToken.objects.filter(user__username=username, expires__gt=timezone.now()).exists()
                )
            )
            out["again"] = await client.call_tool("memory_search", {"query": FACT[1]})
            out["second"] = storage.tokens.model_copy()
        await page.goto(f"{base}/tokens/")
        out["tokens_page"] = await page.inner_text("#oauth-grants")
        await browser.close()
    return out


async def _status(base: str, token: str) -> int:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=30) as http:
        return (await http.post(f"{base}/mcp", json=body, headers=headers)).status_code


async def _revoke(base: str, token: str, client_id: str) -> int:
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(f"{base}/oauth/revoke/", data={"token": token, "client_id": client_id})
        return response.status_code


def test_official_client_signs_in_through_the_consent_page_and_works_as_the_person(
    asgi_server: str, alice: Any, charlie: Any, settings: Any
) -> None:
    require_chromium()
    # The toolkit builds its server once, with the lifetime of that moment: rebuilt per request for this test.
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "ACCESS_TOKEN_EXPIRE_SECONDS": ACCESS_SECONDS,
        "ALWAYS_RELOAD_OAUTHLIB_CORE": True,
    }
    base = asgi_server
    out = asyncio.run(_sign_in_and_work(base, "alice"))

    assert out["asked"] == 1  # one sign-in: the refresh below needed no person
    assert f"Let “{CLIENT_NAME}” use your memory?" in out["consent"] and "alice" in out["consent"]
    assert "Save, correct and forget memories" in out["consent"]
    assert {"memory_save", "memory_search", "memory_restore"} <= out["names"]
    assert not out["saved"].is_error
    stored = Memory.objects.get(pk=out["saved"].structured_content["items"][0]["id"])
    grant = ApiToken.objects.get(user=alice, oauth_application__isnull=False)
    assert stored.palace_id == palace_get(user=alice).pk and stored.created_by_token_id == grant.pk
    assert not Memory.objects.filter(palace=palace_get(user=charlie)).exists()
    assert out["found"].structured_content["hits"][0]["id"] == stored.pk
    app = Application.objects.get(pk=grant.oauth_application_id)
    assert app.name == CLIENT_NAME and app.registration_source == Application.RegistrationSource.DCR
    assert OpLog.objects.filter(op="token.create", target_id=grant.pk).exists()

    # Refreshed, and rotated: a new access and refresh token; the first refresh token is spent.
    first, second = out["first"], out["second"]
    assert second.access_token != first.access_token and second.refresh_token != first.refresh_token
    assert out["again"].structured_content["hits"][0]["id"] == stored.pk
    assert RefreshToken.objects.filter(user=alice, revoked__isnull=False).count() >= 1
    assert CLIENT_NAME in out["tokens_page"] and "memory.read memory.write" in out["tokens_page"]

    # Revocation takes effect on the next call (a fresh token, so expiry is not what ends it).
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "ACCESS_TOKEN_EXPIRE_SECONDS": 3600}
    refreshed = httpx2.post(
        f"{base}/oauth/token/",
        data={
            "grant_type": "refresh_token",
            "refresh_token": second.refresh_token,
            "client_id": app.client_id,
            "resource": f"{base}/mcp",
        },
        timeout=30,
    )
    assert refreshed.status_code == 200, refreshed.text
    live = refreshed.json()["access_token"]
    assert asyncio.run(_status(base, live)) == 200
    assert asyncio.run(_revoke(base, live, app.client_id)) == 200
    assert asyncio.run(_status(base, live)) == 401
