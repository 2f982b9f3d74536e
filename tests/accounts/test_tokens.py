"""Tokens: shown once, stored as a hash, verified by one lookup shared by REST and MCP, revocable, expiring."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.utils import timezone

from accounts.models import ApiToken
from accounts.tokens import hash_token, token_create, token_get_live, token_revoke, token_verify
from palace.actors import Actor
from palace.models import OpLog
from tests.conftest import PROJECT_ORIGIN


def test_create_stores_only_a_hash_and_logs_it(alice: Any) -> None:
    token, raw = token_create(user=alice, label="laptop", scope="read", actor=Actor.for_user(alice))
    assert raw.startswith("atr_") and len(raw) > 30
    token.refresh_from_db()
    assert token.key_hash == hash_token(raw) and raw not in {token.key_hash, token.prefix}
    assert not ApiToken.objects.filter(key_hash=raw).exists()
    row = OpLog.objects.get(op="token.create", target_id=token.pk)
    assert row.detail["label"] == "laptop" and raw not in str(row.detail)


def test_verify_accepts_a_live_token_and_refuses_bad_ones(alice: Any) -> None:
    token, raw = token_create(user=alice, label="t", actor=Actor.for_user(alice))
    assert token_verify(raw) == token
    for bad in ["", None, "atr_nope", raw + "x", raw[:-1], "Bearer " + raw, "x" * 500]:
        assert token_verify(bad) is None


def test_revoked_token_is_refused_and_revocation_is_logged(alice: Any) -> None:
    token, raw = token_create(user=alice, label="t", actor=Actor.for_user(alice))
    assert token_verify(raw) is not None
    token_revoke(token_id=token.pk, user=alice, actor=Actor.for_user(alice))
    assert token_verify(raw) is None
    assert OpLog.objects.filter(op="token.revoke", target_id=token.pk).count() == 1


def test_a_token_verified_earlier_is_checked_again_where_it_is_used(alice: Any) -> None:
    """token_get_live: what the MCP runner asks when a tool body starts, after the SDK verified the token (the
    request's own row is reused; another is loaded and checked like this)."""
    token, _ = token_create(user=alice, label="t", actor=Actor.for_user(alice))
    assert token_get_live(token_id=token.pk) == token  # live: the control
    later = timezone.now() + timedelta(days=1)
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() + timedelta(hours=1))
    assert token_get_live(token_id=token.pk, now=later) is None  # expired by then
    token_revoke(token_id=token.pk, user=alice, actor=Actor.for_user(alice))
    assert token_get_live(token_id=token.pk) is None  # revoked
    other, _ = token_create(user=alice, label="u", actor=Actor.for_user(alice))
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    assert token_get_live(token_id=other.pk) is None  # its user deactivated
    assert token_get_live(token_id=10**9) is None  # no such token


def test_a_user_cannot_revoke_someone_elses_token(alice: Any, charlie: Any) -> None:
    import pytest

    from palace.errors import NotFound

    token, raw = token_create(user=alice, label="t", actor=Actor.for_user(alice))
    with pytest.raises(NotFound):
        token_revoke(token_id=token.pk, user=charlie, actor=Actor.for_user(charlie))
    assert token_verify(raw) is not None


def test_expired_token_is_refused(alice: Any) -> None:
    expires = timezone.now() + timedelta(days=1)
    _, raw = token_create(user=alice, label="t", expires_at=expires, actor=Actor.for_user(alice))
    assert token_verify(raw) is not None
    with time_machine.travel(expires + timedelta(seconds=1)):
        assert token_verify(raw) is None


def test_inactive_user_token_is_refused(alice: Any) -> None:
    _, raw = token_create(user=alice, label="t", actor=Actor.for_user(alice))
    assert token_verify(raw) is not None
    alice.is_active = False
    alice.save()
    assert token_verify(raw) is None


def test_rest_bearer_and_401s(alice: Any, client: Any, token_for: Any, bearer: Any) -> None:
    raw = token_for(alice)
    ok = client.get("/api/v1/palaces", **bearer(raw))
    assert ok.status_code == 200
    assert [p["role"] for p in ok.json()] == ["owner"]
    for headers in ({}, bearer("atr_bad"), {"HTTP_AUTHORIZATION": "Basic abc"}):
        response = client.get("/api/v1/palaces", **headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthenticated"
        assert response["WWW-Authenticate"].startswith("Bearer")


def test_rest_refuses_a_revoked_token(alice: Any, client: Any, bearer: Any) -> None:
    token, raw = token_create(user=alice, label="t", actor=Actor.for_user(alice))
    assert client.get("/api/v1/palaces", **bearer(raw)).status_code == 200
    token_revoke(token_id=token.pk, user=alice, actor=Actor.for_user(alice))
    assert client.get("/api/v1/palaces", **bearer(raw)).status_code == 401


def test_token_command_prints_the_raw_token_once(alice: Any, capsys: Any) -> None:
    from django.core.management import call_command

    call_command("token", "create", "--user", "alice", "--name", "cli", "--scope", "read")
    raw = capsys.readouterr().out.strip()
    assert token_verify(raw) is not None and token_verify(raw).scope == "read"
    call_command("token", "list", "--user", "alice")
    listing = capsys.readouterr().out
    assert "cli" in listing and raw not in listing
    token_id = ApiToken.objects.get(label="cli").pk
    call_command("token", "revoke", str(token_id))
    assert token_verify(raw) is None


def test_token_command_sets_a_default_project_only_for_a_member(
    alice: Any, charlie: Any, project: Any, capsys: Any
) -> None:
    from django.core.management import CommandError, call_command

    # The ssh spelling of the origin names the project stored under its normalised key.
    call_command("token", "create", "--user", "alice", "--name", "app agent", "--project", PROJECT_ORIGIN)
    captured = capsys.readouterr()
    token = token_verify(captured.out.strip())
    assert token is not None and token.default_project_id == project.pk
    assert f"default project {project.origin_key}" in captured.err
    op = OpLog.objects.get(op="token.create", target_id=token.pk)
    assert op.detail["default_project"] == project.origin_key
    call_command("token", "list", "--user", "alice")
    assert f"project {project.origin_key}" in capsys.readouterr().out

    # Charlie is not a member: refused as "not found" (as for a project that does not exist), and no token is made.
    for user, origin in (("charlie", PROJECT_ORIGIN), ("alice", "https://github.com/atrium-test/nowhere")):
        with pytest.raises(CommandError, match="not found"):
            call_command("token", "create", "--user", user, "--name", "sneaky", "--project", origin)
    assert not ApiToken.objects.filter(label="sneaky").exists()
    # A personal palace is no default project.
    with pytest.raises(CommandError, match="not found"):
        call_command("token", "create", "--user", "alice", "--name", "mine", "--project", "personal")


def test_tokens_page_shows_the_raw_token_once_and_revokes(alice: Any, client_for: Any) -> None:
    client = client_for(alice)
    response = client.post("/tokens/create/", {"label": "from panel", "scope": "write"})
    assert response.status_code == 200
    raw = response.context["raw_token"]
    assert raw in response.content.decode()
    token = token_verify(raw)
    assert token is not None
    page = client.get("/tokens/").content.decode()
    assert "from panel" in page and raw not in page
    # The list's button asks first (nothing revoked yet); the confirming post revokes.
    asked = client.post(f"/tokens/{token.pk}/revoke/")
    assert asked.status_code == 200 and 'name="confirm" value="yes"' in asked.content.decode()
    assert token_verify(raw) is not None
    assert client.post(f"/tokens/{token.pk}/revoke/", {"confirm": "yes"}).status_code == 302
    assert token_verify(raw) is None


def test_tokens_page_cannot_revoke_another_users_token(alice: Any, charlie: Any, client_for: Any) -> None:
    token, raw = token_create(user=alice, label="t", actor=Actor.for_user(alice))
    assert client_for(charlie).post(f"/tokens/{token.pk}/revoke/", {"confirm": "yes"}).status_code == 404
    assert client_for(charlie).post(f"/tokens/{token.pk}/revoke/").status_code == 404
    assert token_verify(raw) is not None
    assert client_for(alice).post(f"/tokens/{token.pk}/revoke/", {"confirm": "yes"}).status_code == 302
    assert token_verify(raw) is None


def test_the_tokens_page_sets_a_default_project_only_among_the_users_own(
    client_for: Any, alice: Any, charlie: Any, project: Any
) -> None:
    from accounts.models import ApiToken

    page = client_for(alice).get("/tokens/").content.decode()
    assert project.origin_key in page  # offered to a member
    assert project.origin_key not in client_for(charlie).get("/tokens/").content.decode()
    made = client_for(alice).post("/tokens/create/", {"label": "demo", "project": project.origin_key})
    assert made.status_code == 200 and ApiToken.objects.get(user=alice, label="demo").default_project == project
    refused = client_for(charlie).post("/tokens/create/", {"label": "sneaky", "project": project.origin_key})
    assert refused.status_code == 422 and not ApiToken.objects.filter(user=charlie).exists()
