"""OAuth sign-in for /mcp at the protocol level: discovery, registration, the consent page's answers, the token
endpoint (PKCE, codes, refresh rotation), revocation, and what /mcp and REST accept. The browser and the official
client's OAuth provider against a live server: test_oauth_client.py."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken

from accounts.models import ApiToken
from memory.models import Memory
from palace.models import OpLog
from palace.selectors import palace_get
from tests.api.mcp.conftest import call_each, mcp_client, raw_post_sync, run, text_of
from tests.api.mcp.oauthkit import (
    BASE,
    INITIALIZE_BODY,
    REDIRECT,
    RESOURCE,
    answer,
    ask,
    exchange,
    pkce,
    register,
    sign_in,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_discovery_documents_name_this_server(alice: Any) -> None:
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        prm = Client().get(path).json()
        assert prm["resource"] == RESOURCE and prm["authorization_servers"] == [BASE]
        assert set(prm["scopes_supported"]) == {"memory.read", "memory.write"}
    meta = Client().get("/.well-known/oauth-authorization-server").json()
    assert meta["issuer"] == BASE
    assert meta["authorization_endpoint"] == f"{BASE}/oauth/authorize/"
    assert meta["token_endpoint"] == f"{BASE}/oauth/token/"
    assert meta["revocation_endpoint"] == f"{BASE}/oauth/revoke/"
    assert meta["registration_endpoint"] == f"{BASE}/oauth/register/"
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["response_types_supported"] == ["code"]
    assert meta["grant_types_supported"] == ["authorization_code", "refresh_token"]


def test_public_url_names_the_resource_and_issuer(alice: Any, settings: Any) -> None:
    settings.ATRIUM_PUBLIC_URL = "https://atrium.example.org"
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": "https://atrium.example.org"}
    prm = Client().get("/.well-known/oauth-protected-resource/mcp").json()
    assert prm == {**prm, "resource": "https://atrium.example.org/mcp"}
    assert prm["authorization_servers"] == ["https://atrium.example.org"]
    assert Client().get("/.well-known/oauth-authorization-server").json()["issuer"] == "https://atrium.example.org"


def test_401_from_mcp_names_the_resource_metadata(tokens: dict[str, str]) -> None:
    assert raw_post_sync(INITIALIZE_BODY, token=tokens["alice"]).status_code == 200  # positive control
    refused = raw_post_sync(INITIALIZE_BODY)
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    named = re.findall(r'(?:^Bearer |, )resource_metadata="([^"]*)"', challenge)
    assert named == [f"{BASE}/.well-known/oauth-protected-resource/mcp"], challenge


def test_an_approved_client_acts_as_the_user_with_a_personal_tokens_isolation(
    alice: Any, charlie: Any, client_for: Any, token_for: Any
) -> None:
    charlie_token = token_for(charlie)
    run(call_each(charlie_token, [("memory_save", {"content": "Charlie keeps bees on the roof.", "kind": "fact"})]))
    _, tokens = sign_in(alice, client_for)
    assert tokens["token_type"] == "Bearer" and tokens["refresh_token"]
    assert tokens["scope"] == "memory.read memory.write"

    saved, found, theirs = run(
        call_each(
            tokens["access_token"],
            [
                ("memory_save", {"content": "Alice's build runs on the kestrel runner.", "kind": "fact"}),
                ("memory_search", {"query": "kestrel runner"}),
                ("memory_search", {"query": "bees on the roof"}),
            ],
        )
    )
    assert not saved.is_error, text_of(saved)
    grant = ApiToken.objects.get(user=alice, oauth_application__isnull=False)
    stored = Memory.objects.get(pk=saved.structured_content["items"][0]["id"])
    assert stored.palace_id == palace_get(user=alice).pk
    assert stored.created_by_token_id == grant.pk  # attributed to the grant, like a personal token
    assert found.structured_content["hits"][0]["id"] == stored.pk
    assert all("bees" not in h["content"] for h in theirs.structured_content["hits"])  # charlie's stays his
    assert grant.scope == "write" and grant.label == "Test agent (OAuth)" and grant.last_used_at is not None
    assert OpLog.objects.filter(op="token.create", target_id=grant.pk).exists()


def test_oauth_tokens_are_refused_by_rest_and_personal_tokens_keep_working(
    alice: Any, client_for: Any, token_for: Any, bearer: Any
) -> None:
    _, tokens = sign_in(alice, client_for)
    personal = token_for(alice)
    assert Client().get("/api/v1/profile.txt", **bearer(personal)).status_code == 200  # positive control
    assert Client().get("/api/v1/profile.txt", **bearer(tokens["access_token"])).status_code == 401
    assert raw_post_sync(INITIALIZE_BODY, token=personal).status_code == 200
    assert raw_post_sync(INITIALIZE_BODY, token=tokens["access_token"]).status_code == 200


def test_a_token_for_another_resource_is_refused_at_mcp(alice: Any, client_for: Any) -> None:
    browser = client_for(alice)
    client_id = register()
    _, challenge = pkce()
    refused = ask(browser, client_id, challenge, resource="https://elsewhere.example/mcp")
    assert refused.status_code == 302
    assert parse_qs(urlsplit(refused["Location"]).query)["error"] == ["invalid_target"]
    assert not Grant.objects.exists()

    _, tokens = sign_in(alice, client_for)
    assert raw_post_sync(INITIALIZE_BODY, token=tokens["access_token"]).status_code == 200  # positive control
    row = AccessToken.objects.get(token_checksum=hashlib.sha256(tokens["access_token"].encode()).hexdigest())
    assert row.resource == [RESOURCE]
    AccessToken.objects.filter(pk=row.pk).update(resource=["https://elsewhere.example/mcp"])
    assert raw_post_sync(INITIALIZE_BODY, token=tokens["access_token"]).status_code == 401
    AccessToken.objects.filter(pk=row.pk).update(resource=[])  # unbound: refused too
    assert raw_post_sync(INITIALIZE_BODY, token=tokens["access_token"]).status_code == 401


def test_no_resource_named_binds_the_token_to_mcp(alice: Any, client_for: Any) -> None:
    browser = client_for(alice)
    client_id = register()
    verifier, challenge = pkce()
    code = answer(browser, ask(browser, client_id, challenge, resource=None))["code"][0]
    response = exchange(client_id, code, verifier, resource="")
    assert response.status_code == 200, response.content
    token = response.json()["access_token"]
    assert AccessToken.objects.get(token_checksum=hashlib.sha256(token.encode()).hexdigest()).resource == [RESOURCE]
    assert raw_post_sync(INITIALIZE_BODY, token=token).status_code == 200


def test_pkce_is_required_s256_only_and_the_verifier_must_match(alice: Any, client_for: Any) -> None:
    browser = client_for(alice)
    client_id = register()
    verifier, challenge = pkce()
    for changes in ({"code_challenge": None, "code_challenge_method": None}, {"code_challenge_method": "plain"}):
        refused = ask(browser, client_id, challenge, **changes)
        assert refused.status_code == 302 and "error=" in refused["Location"], changes
    code = answer(browser, ask(browser, client_id, challenge))["code"][0]
    wrong = exchange(client_id, code, pkce()[0])
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    assert exchange(client_id, code, verifier).status_code == 200  # positive control: the right verifier


def test_a_code_is_used_once(alice: Any, client_for: Any) -> None:
    browser = client_for(alice)
    client_id = register()
    verifier, challenge = pkce()
    code = answer(browser, ask(browser, client_id, challenge))["code"][0]
    assert exchange(client_id, code, verifier).status_code == 200
    again = exchange(client_id, code, verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


def test_a_redirect_uri_the_client_did_not_register_is_refused_without_redirecting(alice: Any, client_for: Any) -> None:
    browser = client_for(alice)
    client_id = register()
    _, challenge = pkce()
    assert ask(browser, client_id, challenge).status_code == 200  # positive control: the registered one
    refused = ask(browser, client_id, challenge, redirect_uri="http://127.0.0.1:9/elsewhere")
    assert refused.status_code == 400 and "Location" not in refused
    assert b"invalid_request" in refused.content or b"Mismatching redirect URI" in refused.content
    page = ask(browser, client_id, challenge)
    form = {k: v for k, v in page.context["form"].initial.items() if v is not None}
    unknown = browser.post("/oauth/authorize/", {**form, "client_id": "no-such-client", "allow": "yes"})
    assert unknown.status_code == 400 and b"invalid_client" in unknown.content  # a tampered form: no 500
    assert not ApiToken.objects.filter(oauth_application__isnull=False).exists()


def test_denied_consent_stores_nothing_and_tells_the_client(alice: Any, client_for: Any) -> None:
    browser = client_for(alice)
    client_id = register()
    _, challenge = pkce()
    back = answer(browser, ask(browser, client_id, challenge), allow=False)
    assert back["error"] == ["access_denied"] and back["state"] == ["st-1"]
    assert not Grant.objects.exists() and not ApiToken.objects.filter(oauth_application__isnull=False).exists()
    approved = answer(browser, ask(browser, client_id, challenge))  # positive control
    assert approved["code"] and ApiToken.objects.filter(user=alice, oauth_application__isnull=False).count() == 1


def test_a_read_grant_cannot_call_a_write_tool(alice: Any, client_for: Any) -> None:
    _, tokens = sign_in(alice, client_for, read_only="on")
    assert tokens["scope"] == "memory.read"
    grant = ApiToken.objects.get(user=alice, oauth_application__isnull=False)
    assert grant.scope == "read"

    async def listed_and_called() -> tuple[set[str], Any, Any]:
        async with mcp_client(tokens["access_token"]) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            saved = await client.call_tool("memory_save", {"content": "Read grants must not write.", "kind": "fact"})
            found = await client.call_tool("memory_search", {"query": "anything"})
            return names, saved, found

    names, saved, found = run(listed_and_called())
    assert "memory_search" in names and "memory_save" not in names
    assert saved.is_error and "read scope" in text_of(saved)
    assert not found.is_error  # positive control: reading works
    assert not Memory.objects.filter(content__contains="Read grants").exists()


def test_refresh_rotates_and_a_reused_refresh_token_is_refused(alice: Any, client_for: Any) -> None:
    client_id, first = sign_in(alice, client_for)
    refresh = {"grant_type": "refresh_token", "client_id": client_id, "resource": RESOURCE}
    second = Client().post("/oauth/token/", {**refresh, "refresh_token": first["refresh_token"]})
    assert second.status_code == 200, second.content
    rotated = second.json()
    assert rotated["refresh_token"] != first["refresh_token"] and rotated["access_token"] != first["access_token"]
    assert raw_post_sync(INITIALIZE_BODY, token=rotated["access_token"]).status_code == 200
    assert raw_post_sync(INITIALIZE_BODY, token=first["access_token"]).status_code == 401  # the old one ended

    reused = Client().post("/oauth/token/", {**refresh, "refresh_token": first["refresh_token"]})
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    # A replayed refresh token means it leaked: the whole family ends, the rotated tokens too.
    assert raw_post_sync(INITIALIZE_BODY, token=rotated["access_token"]).status_code == 401
    again = Client().post("/oauth/token/", {**refresh, "refresh_token": rotated["refresh_token"]})
    assert again.status_code == 400


def test_revocation_takes_effect_on_the_next_call(alice: Any, client_for: Any) -> None:
    client_id, tokens = sign_in(alice, client_for)
    assert raw_post_sync(INITIALIZE_BODY, token=tokens["access_token"]).status_code == 200
    revoked = Client().post("/oauth/revoke/", {"token": tokens["access_token"], "client_id": client_id})
    assert revoked.status_code == 200
    assert raw_post_sync(INITIALIZE_BODY, token=tokens["access_token"]).status_code == 401


def test_revoking_the_grant_on_the_tokens_page_ends_the_clients_tokens(alice: Any, client_for: Any) -> None:
    _, tokens = sign_in(alice, client_for)
    assert raw_post_sync(INITIALIZE_BODY, token=tokens["access_token"]).status_code == 200
    grant = ApiToken.objects.get(user=alice, oauth_application__isnull=False)
    page = client_for(alice).get("/tokens/").content.decode()
    assert "Test agent" in page.split('<section id="oauth-grants"')[1]  # listed among the OAuth sign-ins
    client_for(alice).post(f"/tokens/{grant.pk}/revoke/", {"confirm": "yes"})
    assert raw_post_sync(INITIALIZE_BODY, token=tokens["access_token"]).status_code == 401
    assert not RefreshToken.objects.filter(user=alice).exists()
    assert OpLog.objects.filter(op="token.revoke", target_id=grant.pk).exists()


def test_an_expired_access_token_is_refused(alice: Any, client_for: Any) -> None:
    _, tokens = sign_in(alice, client_for)
    assert raw_post_sync(INITIALIZE_BODY, token=tokens["access_token"]).status_code == 200
    AccessToken.objects.filter(user=alice).update(expires=timezone.now() - timedelta(seconds=1))
    assert raw_post_sync(INITIALIZE_BODY, token=tokens["access_token"]).status_code == 401


def test_registration_is_bounded_and_unused_registrations_expire(alice: Any, client_for: Any, settings: Any) -> None:
    settings.ATRIUM_OAUTH_REGISTRATIONS_PER_HOUR = 2
    used = register("Used")
    stale = register("Stale")
    extra = Client().post(
        "/oauth/register/",
        data=json.dumps({"client_name": "Third", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}),
        content_type="application/json",
    )
    assert extra.status_code == 401 and extra.json()["error"] == "access_denied"

    browser = client_for(alice)
    answer(browser, ask(browser, used, pkce()[1]))  # a grant: "Used" is in use
    Application.objects.update(created=timezone.now() - timedelta(hours=25))
    register("Later")  # the hour's count is clear again, and the stale one went
    assert not Application.objects.filter(client_id=stale).exists()
    assert Application.objects.filter(client_id=used).exists()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_default_project_chosen_on_the_consent_page_is_the_grants(
    alice: Any, bob: Any, client_for: Any, mode: str
) -> None:
    from palace.actors import Actor
    from palace.services import project_create

    project = project_create(
        origin="https://github.com/atrium-test/oauth-demo", owner=alice, actor=Actor.for_user(alice)
    )
    outsider = project_create(origin="https://github.com/atrium-test/not-alices", owner=bob, actor=Actor.for_user(bob))
    browser = client_for(alice)
    client_id = register()
    _, challenge = pkce()
    page = ask(browser, client_id, challenge)
    assert project.origin_key in page.content.decode() and outsider.origin_key not in page.content.decode()
    refused = browser.post(  # a project alice is not in: the form again, with the reason; no grant
        "/oauth/authorize/",
        {
            **{k: v for k, v in page.context["form"].initial.items() if v},
            "allow": "yes",
            "project": outsider.origin_key,
        },
    )
    assert refused.status_code == 200 and not ApiToken.objects.filter(oauth_application__isnull=False).exists()

    _, tokens = sign_in(alice, client_for, project=project.origin_key)
    saved = run(
        call_each(
            tokens["access_token"], [("memory_save", {"content": "The demo ships on Friday.", "kind": "fact"})], mode
        )
    )[0]
    assert not saved.is_error, text_of(saved)
    assert saved.structured_content["palaceUsed"]["chosenBy"] == "token"
    assert Memory.objects.get(pk=saved.structured_content["items"][0]["id"]).palace_id == project.pk


def test_the_consent_page_speaks_the_pages_language(alice: Any, client_for: Any) -> None:
    """The client's name, what it asks and the buttons in English and in Chinese (the scopes' descriptions too)."""
    browser = client_for(alice)
    client_id = register(name="Probe agent")
    _, challenge = pkce()
    en = ask(browser, client_id, challenge).content.decode()
    assert "Let “Probe agent” use your memory?" in en and "Save, correct and forget memories" in en
    browser.defaults["HTTP_ACCEPT_LANGUAGE"] = "zh-CN,zh;q=0.9"
    zh = ask(browser, client_id, challenge).content.decode()
    assert "允许“Probe agent”使用你的记忆吗？" in zh and "保存、更正和遗忘记忆" in zh and ">批准<" in zh
    assert "Save, correct and forget memories" not in zh
