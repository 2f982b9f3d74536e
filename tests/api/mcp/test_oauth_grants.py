"""Every approval is its own grant: one person signs the same client in on two devices (two PKCE flows), both
sessions work, refresh and replay detection stay inside each one, and revoking one leaves the other working."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from oauth2_provider.models import Grant

from accounts.models import ApiToken
from accounts.tokens import token_revoke
from palace.actors import Actor
from palace.models import OpLog
from tests.api.mcp.conftest import raw_post_sync
from tests.api.mcp.oauthkit import INITIALIZE_BODY, RESOURCE, answer, ask, exchange, pkce, register, sign_in

pytestmark = pytest.mark.django_db(transaction=True)


def _works(access: str) -> bool:
    return raw_post_sync(INITIALIZE_BODY, token=access).status_code == 200


def _refresh(client_id: str, refresh: str) -> Any:
    data = {"grant_type": "refresh_token", "client_id": client_id, "resource": RESOURCE, "refresh_token": refresh}
    return Client().post("/oauth/token/", data)


def test_two_approvals_of_one_client_are_two_grants_each_revocable_alone(alice: Any, client_for: Any) -> None:
    client_id = register("Laptop and desktop agent")
    _, laptop = sign_in(alice, client_for, client_id)
    _, desktop = sign_in(alice, client_for, client_id)
    assert _works(laptop["access_token"]) and _works(desktop["access_token"])  # the second did not end the first
    grants = list(ApiToken.objects.filter(user=alice, oauth_application__client_id=client_id).order_by("pk"))
    assert len(grants) == 2 and all(g.revoked_at is None for g in grants)
    assert None not in {g.oauth_token_family for g in grants}
    assert len({g.oauth_token_family for g in grants}) == 2

    # A refresh rotates inside its own session only.
    rotated = _refresh(client_id, laptop["refresh_token"])
    assert rotated.status_code == 200, rotated.content
    laptop = rotated.json()
    assert _works(laptop["access_token"]) and _works(desktop["access_token"])

    token_revoke(token_id=grants[0].pk, user=alice, actor=Actor.for_user(alice))
    assert not _works(laptop["access_token"])
    assert _refresh(client_id, laptop["refresh_token"]).status_code == 400
    assert _works(desktop["access_token"])  # the other device's session goes on
    again = _refresh(client_id, desktop["refresh_token"])
    assert again.status_code == 200 and _works(again.json()["access_token"])
    revoked = OpLog.objects.filter(op="token.revoke").values_list("target_id", flat=True)
    assert list(revoked) == [grants[0].pk]
    grants[1].refresh_from_db()
    assert grants[1].revoked_at is None


def test_a_replayed_refresh_token_ends_its_own_session_not_the_other_devices(alice: Any, client_for: Any) -> None:
    client_id = register()
    _, first = sign_in(alice, client_for, client_id)
    _, second = sign_in(alice, client_for, client_id)
    rotated = _refresh(client_id, first["refresh_token"]).json()
    assert _refresh(client_id, first["refresh_token"]).status_code == 400  # replayed: its family ends
    assert not _works(rotated["access_token"])
    assert _works(second["access_token"])  # positive control: the other family is untouched


def test_a_grant_revoked_before_its_code_is_exchanged_takes_the_code_with_it(alice: Any, client_for: Any) -> None:
    browser = client_for(alice)
    client_id = register()
    kept_verifier, kept_challenge = pkce()
    kept_code = answer(browser, ask(browser, client_id, kept_challenge))["code"][0]
    gone_verifier, gone_challenge = pkce()
    gone_code = answer(browser, ask(browser, client_id, gone_challenge))["code"][0]
    gone = ApiToken.objects.get(oauth_code__code=gone_code)
    assert ApiToken.objects.get(oauth_code__code=kept_code).pk != gone.pk

    token_revoke(token_id=gone.pk, user=alice, actor=Actor.for_user(alice))
    assert not Grant.objects.filter(code=gone_code).exists()
    refused = exchange(client_id, gone_code, gone_verifier)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    kept = exchange(client_id, kept_code, kept_verifier)  # positive control: the other approval's code
    assert kept.status_code == 200 and _works(kept.json()["access_token"])
