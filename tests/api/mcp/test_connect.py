"""Connecting real clients: GET /api/v1/profile.txt for session-start hooks, and `atrium mcp-config`."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from accounts.models import ApiToken
from memory.models import Memory
from palace.selectors import palace_get

pytestmark = pytest.mark.django_db


def test_profile_txt_serves_the_callers_profile_as_plain_text(
    alice: Any, charlie: Any, token_for: Any, bearer: Any
) -> None:
    Memory.objects.create(palace=palace_get(user=alice), kind="preference", content="Alice drinks green tea.")
    Memory.objects.create(palace=palace_get(user=charlie), kind="fact", content="Charlie's private note.")
    response = Client().get("/api/v1/profile.txt", **bearer(token_for(alice, scope="read")))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert text.startswith("<atrium_memory_context>")
    assert "Alice drinks green tea." in text and "Charlie" not in text
    tokens, budget = response["X-Atrium-Profile-Tokens"].split("/")
    assert float(tokens) <= int(budget) == 1024

    other = Client().get("/api/v1/profile.txt", **bearer(token_for(charlie)))
    assert "Charlie's private note." in other.content.decode() and "Alice" not in other.content.decode()


def test_profile_txt_needs_a_bearer_token(alice: Any, client_for: Any) -> None:
    response = Client().get("/api/v1/profile.txt")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert Client().get("/api/v1/profile.txt", HTTP_AUTHORIZATION="Bearer atr_nope").status_code == 401


@pytest.mark.parametrize("client", ["claude-code", "cursor", "codex", "generic"])
def test_mcp_config_prints_a_snippet_without_a_token(alice: Any, client: str) -> None:
    out, err = StringIO(), StringIO()
    call_command("mcp_config", "--user", "alice", "--client", client, stdout=out, stderr=err)
    text = out.getvalue()
    assert "http://127.0.0.1:8000/mcp" in text
    assert "ATRIUM_TOKEN" in text
    assert "atr_" not in text
    assert not ApiToken.objects.exists()
    if client == "cursor":
        config = json.loads(text.split("\n", 1)[1])
        assert config["mcpServers"]["atrium"]["headers"]["Authorization"] == "Bearer ${env:ATRIUM_TOKEN}"
    if client == "codex":
        assert 'bearer_token_env_var = "ATRIUM_TOKEN"' in text


def test_mcp_config_with_new_token_mints_one_that_works(alice: Any, bearer: Any) -> None:
    out = StringIO()
    call_command(
        "mcp_config",
        "--user",
        "alice",
        "--client",
        "claude-code",
        "--with-new-token",
        "--url",
        "https://atrium.example",
        stdout=out,
        stderr=StringIO(),
    )
    text = out.getvalue()
    row = ApiToken.objects.get(user=alice)
    raw = text.split("Bearer ", 1)[1].split('"', 1)[0]
    assert raw.startswith("atr_") and raw.startswith(row.prefix)
    assert "https://atrium.example/mcp" in text
    assert Client().get("/api/v1/profile.txt", **bearer(raw)).status_code == 200


def test_mcp_config_refuses_unknown_users(db: Any) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("mcp_config", "--user", "nobody", "--client", "generic", stdout=StringIO(), stderr=StringIO())
