"""The MCP endpoint's transport and auth, at the HTTP level and through the official client in both eras."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import ApiToken
from accounts.tokens import token_revoke
from api.mcp.server import WRITE_TOOLS
from palace.actors import Actor
from tests.api.mcp.conftest import MODES, mcp_client, raw_post_sync, run

ALL_TOOLS = {
    "memory_save",
    "memory_search",
    "memory_assess",
    "memory_timeline",
    "memory_update",
    "memory_forget",
    "memory_restore",
    "memory_report",
    "memory_review_queue",
    "memory_review",
    "memory_stats",
    "memory_examine",
    "memory_neighbors",
    "memory_tour",
    "memory_audit_forgotten",
    "memory_distill",
    "memory_profile",
    "memory_checkout",
    "memory_distill_undo",
    "memory_resolve",
    "memory_profile_edit",
    "memory_handoff_save",
    "memory_handoff_load",
    "memory_history",
    "memory_facts",
    "memory_export",
    "memory_episode_timeline",
    "memory_ingest_history",
}
# Read tools with a write mode: listed for read tokens, not read-only in their annotations.
MODE_WRITES = {"memory_facts"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


async def _list(token: str, mode: str, url: str = "http://testserver/mcp") -> tuple[str, set[str], Any]:
    async with mcp_client(token, mode, url=url) as client:
        listed = await client.list_tools()
        return client.protocol_version, {t.name for t in listed.tools}, listed


@pytest.mark.parametrize("mode", MODES)
def test_write_token_lists_every_tool_in_both_eras(tokens: dict[str, str], mode: str) -> None:
    version, names, listed = run(_list(tokens["alice"], mode))
    assert version == ("2026-07-28" if mode == "auto" else "2025-11-25")
    assert names == ALL_TOOLS
    for tool in listed.tools:
        assert tool.output_schema is not None, tool.name
        assert tool.description and "Next" in tool.description, tool.name
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (tool.name not in WRITE_TOOLS | MODE_WRITES)


@pytest.mark.parametrize("mode", MODES)
def test_read_token_sees_only_read_tools(tokens: dict[str, str], mode: str) -> None:
    _, names, _ = run(_list(tokens["alice_read"], mode))
    assert names == ALL_TOOLS - WRITE_TOOLS
    _, write_names, _ = run(_list(tokens["alice"], mode))  # positive control
    assert write_names >= WRITE_TOOLS


def test_trailing_slash_is_served_too(tokens: dict[str, str]) -> None:
    _, names, _ = run(_list(tokens["alice"], "legacy", url="http://testserver/mcp/"))
    assert names == ALL_TOOLS
    _, names, _ = run(_list(tokens["alice"], "auto", url="http://testserver/mcp/"))
    assert names == ALL_TOOLS


def _assert_401(response: Any) -> None:
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_missing_bad_revoked_and_expired_tokens_get_401_with_a_bearer_challenge(
    tokens: dict[str, str], alice: Any
) -> None:
    ok = raw_post_sync(INITIALIZE, token=tokens["alice"])  # positive control
    assert ok.status_code == 200, ok.text

    _assert_401(raw_post_sync(INITIALIZE))
    _assert_401(raw_post_sync(INITIALIZE, token="atr_not-a-real-token"))
    _assert_401(raw_post_sync(INITIALIZE, token="x" * 5000))
    _assert_401(raw_post_sync(INITIALIZE, headers={"Authorization": "Basic YWxpY2U6cHc="}))

    row = ApiToken.objects.get(user=alice, label="test")
    token_revoke(token_id=row.pk, user=alice, actor=Actor.for_user(alice))
    _assert_401(raw_post_sync(INITIALIZE, token=tokens["alice"]))

    read = ApiToken.objects.get(user=alice, label="read")
    ApiToken.objects.filter(pk=read.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    _assert_401(raw_post_sync(LIST_TOOLS, token=tokens["alice_read"]))


def test_inactive_user_gets_401(tokens: dict[str, str], charlie: Any) -> None:
    assert raw_post_sync(INITIALIZE, token=tokens["charlie"]).status_code == 200
    charlie.is_active = False
    charlie.save(update_fields=["is_active"])
    _assert_401(raw_post_sync(INITIALIZE, token=tokens["charlie"]))


def test_foreign_origin_is_refused_with_403(tokens: dict[str, str]) -> None:
    local = raw_post_sync(INITIALIZE, token=tokens["alice"], headers={"Origin": "http://127.0.0.1:8000"})
    assert local.status_code == 200
    evil = raw_post_sync(INITIALIZE, token=tokens["alice"], headers={"Origin": "http://evil.example"})
    assert evil.status_code == 403


def test_foreign_host_is_refused(tokens: dict[str, str]) -> None:
    response = raw_post_sync(INITIALIZE, token=tokens["alice"], headers={"Host": "evil.example"})
    assert response.status_code in (400, 421)


def test_oversized_body_gets_413_and_stores_nothing(tokens: dict[str, str], settings: Any) -> None:
    from memory.models import Memory

    huge = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "memory_save", "arguments": {"content": "x" * 1_100_000, "kind": "fact"}},
    }
    response = raw_post_sync(huge, token=tokens["alice"])
    assert response.status_code == 413
    assert not Memory.objects.exists()


def test_get_and_delete_are_not_streams(tokens: dict[str, str]) -> None:
    assert raw_post_sync(b"", token=tokens["alice"], method="GET").status_code == 405
    assert raw_post_sync(b"", token=tokens["alice"], method="DELETE").status_code == 405


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[]",
        b'"just a string"',
        b'{"jsonrpc": "2.0", "id": 1}',
        b'{"jsonrpc": "1.0", "id": 1, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "nope"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "no/such/method", "params": {}}',
        b"\x00\xff\xfe",
    ],
)
def test_malformed_json_rpc_is_a_clean_client_error(tokens: dict[str, str], body: bytes) -> None:
    response = raw_post_sync(body, token=tokens["alice"])
    assert 200 <= response.status_code < 500, response.text
    assert "Traceback" not in response.text
    if response.status_code == 200:
        assert "error" in response.json()
