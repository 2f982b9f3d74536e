"""OAuth grants on the Tokens page, beside personal tokens: the client (name, and the client id or the host of its
metadata document's URL), the scopes, the default project, created, last used (real: set when the grant's token
authenticates a call), and Revoke — by the owner on the page and by an operator in the admin, each with its op
row; nobody else sees a grant or can revoke it by its id."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from oauth2_provider.models import Application

from accounts.models import ApiToken
from accounts.oauth import oauth_grant_approve
from palace.actors import Actor
from palace.models import OpLog
from tests.api.mcp.conftest import raw_post_sync
from tests.api.mcp.oauthkit import INITIALIZE_BODY, register, sign_in

pytestmark = pytest.mark.django_db(transaction=True)
REASON = "ticket 77: laptop lost"


@pytest.fixture(autouse=True)
def _close_mcp_threads() -> Any:
    """The /mcp calls below run on the MCP ORM threads, which keep their database connections; end them after each
    test so the test database can be flushed and dropped (as tests/api/mcp/conftest.py does there)."""
    yield
    from config.asgi import lifecycle

    lifecycle.close_workers()


def _works(access: str) -> bool:
    return raw_post_sync(INITIALIZE_BODY, token=access).status_code == 200


def _grants_section(page: Any) -> str:
    found = re.search(r'<section id="oauth-grants".*?</section>', page.content.decode(), re.S)
    assert found, "the Tokens page has no OAuth section"
    return found.group(0)


def _row(section: str, grant: ApiToken) -> str:
    found = re.search(rf'<tr data-grant="{grant.pk}">.*?</tr>', section, re.S)
    assert found, f"grant {grant.pk} is not listed"
    return found.group(0)


def test_the_owner_sees_and_revokes_a_grant_another_user_neither_sees_nor_revokes_it(
    alice: Any, charlie: Any, project: Any, client_for: Any
) -> None:
    client_id = register("Kestrel agent")
    _, tokens = sign_in(alice, client_for, client_id, project=project.origin_key)
    grant = ApiToken.objects.get(user=alice, oauth_application__client_id=client_id)
    owner = client_for(alice)

    row = _row(_grants_section(owner.get("/tokens/")), grant)
    assert "Kestrel agent" in row and client_id in row
    assert "memory.read memory.write" in row and project.origin_key in row
    assert ">never<" in row and ">active<" in row and f"/tokens/{grant.pk}/revoke/" in row
    personal = owner.get("/tokens/").content.decode().split('<section id="oauth-grants"')[0]
    assert "Kestrel agent" not in personal  # listed once, as a grant, not among personal tokens

    assert _works(tokens["access_token"])
    grant.refresh_from_db()
    assert grant.last_used_at is not None  # the call set it
    used = _row(_grants_section(owner.get("/tokens/")), grant)
    assert ">never<" not in used and grant.last_used_at.strftime("%Y-%m-%d") in used

    outsider = client_for(charlie)
    theirs = outsider.get("/tokens/")
    assert theirs.status_code == 200 and "Kestrel agent" not in theirs.content.decode()
    assert outsider.post(f"/tokens/{grant.pk}/revoke/").status_code == 404
    assert outsider.post(f"/tokens/{grant.pk}/revoke/", {"confirm": "yes"}).status_code == 404
    grant.refresh_from_db()
    assert grant.revoked_at is None and _works(tokens["access_token"])  # still works afterwards
    assert not OpLog.objects.filter(op="token.revoke").exists()

    asked = owner.post(f"/tokens/{grant.pk}/revoke/")
    assert asked.status_code == 200 and "Revoke the OAuth sign-in “Kestrel agent (OAuth)”?" in asked.content.decode()
    assert _works(tokens["access_token"])  # asking is not revoking
    assert owner.post(f"/tokens/{grant.pk}/revoke/", {"confirm": "yes"}).status_code == 302
    grant.refresh_from_db()
    assert grant.revoked_at is not None and not _works(tokens["access_token"])
    op = OpLog.objects.get(op="token.revoke", target_id=grant.pk)
    assert op.actor_user_id == alice.pk
    after = _row(_grants_section(owner.get("/tokens/")), grant)
    assert ">revoked<" in after and "/revoke/" not in after


def test_an_operator_revokes_one_grant_in_the_admin_and_the_other_device_keeps_working(
    alice: Any, make_user: Any, client_for: Any
) -> None:
    root = make_user("root", admin=True)
    client_id = register("Two-device agent")
    _, laptop = sign_in(alice, client_for, client_id)
    _, desktop = sign_in(alice, client_for, client_id)
    lost, kept = ApiToken.objects.filter(user=alice, oauth_application__client_id=client_id).order_by("pk")
    admin = Client()
    admin.force_login(root)
    url = "/admin/accounts/apitoken/"
    assert "Two-device agent (OAuth)" in admin.get(url).content.decode()
    chosen = {"action": "revoke_tokens", "_selected_action": [lost.pk]}
    admin.post(url, chosen)  # no reason: refused, nothing revoked
    assert _works(laptop["access_token"])
    admin.post(url, {**chosen, "reason": REASON})
    lost.refresh_from_db()
    kept.refresh_from_db()
    assert lost.revoked_at is not None and kept.revoked_at is None
    assert not _works(laptop["access_token"]) and _works(desktop["access_token"])
    op = OpLog.objects.get(op="token.revoke", target_id=lost.pk)
    assert (op.actor_user_id, op.reason) == (root.pk, REASON)
    assert not OpLog.objects.filter(op="token.revoke", target_id=kept.pk).exists()


def test_a_metadata_document_client_is_shown_by_its_host_and_a_read_grant_by_its_scope(
    alice: Any, client_for: Any
) -> None:
    app = Application.objects.create(
        client_id="https://agents.example.org/oauth/client.json",
        name="Hosted agent",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="https://agents.example.org/callback",
    )
    grant = oauth_grant_approve(
        user=alice, application=app, scopes=["memory.read"], project=None, actor=Actor.for_user(alice)
    )
    page = client_for(alice).get("/tokens/")
    row = _row(_grants_section(page), grant)
    assert "Hosted agent" in row and ">agents.example.org<" in row and "client.json" not in row
    assert "<code>memory.read</code>" in row and ">none<" in row
    zh = client_for(alice)
    zh.defaults["HTTP_ACCEPT_LANGUAGE"] = "zh-CN,zh;q=0.9"
    chinese = _grants_section(zh.get("/tokens/"))
    assert "OAuth 登录" in chinese and "从未" in chinese and "Hosted agent" in chinese
