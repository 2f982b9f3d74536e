"""MCP memory_export through the official client: inline JSON when small, a signed link that downloads the same
export otherwise; an outsider's project is not found (the owner's positive control)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.test import Client

from api.mcp.tools import export as export_tool
from palace.models import Palace
from tests.api.mcp.conftest import call_each, mcp_client, run, text_of
from tests.conftest import PROJECT_ORIGIN
from tests.ops.portability.world import build_world


def test_memory_export_inline_link_and_outsider(
    tokens: dict[str, str], alice: Any, project: Palace, monkeypatch: Any
) -> None:
    build_world(alice, project)
    inline, vault, outsider = run(
        call_each(
            tokens["alice"],
            [
                ("memory_export", {"project": PROJECT_ORIGIN, "redacted": True}),
                ("memory_export", {"project": PROJECT_ORIGIN, "format": "markdown"}),
                ("memory_export", {"project": "github.com/atrium-test/does-not-exist"}),
            ],
        )
    )
    out = inline.structured_content
    assert not inline.is_error and out["url"] is None and out["memories"] == 4
    assert out["document"]["palaces"][0]["origin"] == project.origin_key
    link = vault.structured_content
    assert link["document"] is None and link["expiresInSeconds"] == 600 and link["url"] in text_of(vault)
    parts = urlsplit(link["url"])
    download = Client().get(f"{parts.path}?{parts.query}")
    assert download.status_code == 200 and download["Content-Type"] == "application/zip"
    assert outsider.is_error and "not found" in text_of(outsider).lower()
    (charlie,) = run(call_each(tokens["charlie"], [("memory_export", {"project": PROJECT_ORIGIN})]))
    assert charlie.is_error and "not found" in text_of(charlie).lower()
    monkeypatch.setattr(export_tool, "INLINE_BYTES", 10)  # a large JSON export: a link instead
    (large,) = run(call_each(tokens["alice"], [("memory_export", {"project": PROJECT_ORIGIN})]))
    assert large.structured_content["url"] and large.structured_content["document"] is None


def _download(url: str) -> Any:
    parts = urlsplit(url)
    return Client().get(f"{parts.path}?{parts.query}")


def test_memory_export_link_works_once_and_dies_with_its_token(
    tokens: dict[str, str], alice: Any, project: Palace
) -> None:
    """Issue 24, item 7: a link made by token T downloads once (the second download is refused); a link made by T
    is refused once T is revoked, though T's earlier link worked (the control)."""
    from accounts.models import ApiToken
    from accounts.tokens import token_revoke
    from ops.models import ExportLinkUse
    from palace.actors import Actor

    build_world(alice, project)
    vault = {"project": PROJECT_ORIGIN, "format": "markdown"}
    first, second = run(call_each(tokens["alice"], [("memory_export", vault), ("memory_export", vault)]))
    assert first.structured_content["url"] != second.structured_content["url"]
    assert "once" in text_of(first) and "revoked" in text_of(first)
    ok = _download(first.structured_content["url"])
    assert ok.status_code == 200 and ok["Content-Type"] == "application/zip"
    assert ExportLinkUse.objects.filter(user_id=alice.pk).count() == 1  # the used marker is stored
    again = _download(first.structured_content["url"])
    assert again.status_code == 404 and "already used" in again.json()["error"]["message"]
    (row,) = ApiToken.objects.filter(user=alice, label="test")
    token_revoke(token_id=row.pk, user=alice, actor=Actor.for_user(alice))
    revoked = _download(second.structured_content["url"])
    assert revoked.status_code == 404 and "revoked" in revoked.json()["error"]["message"]
    assert ExportLinkUse.objects.count() == 1  # a refused download marks nothing


def test_memory_export_without_project_is_a_tool_error_naming_it(
    tokens: dict[str, str], alice: Any, project: Palace, token_for: Any
) -> None:
    build_world(alice, project)
    missing, blank, named = run(
        call_each(
            tokens["alice"],
            [
                ("memory_export", {}),
                ("memory_export", {"project": "  "}),
                ("memory_export", {"project": PROJECT_ORIGIN}),
            ],
        )
    )

    async def schema() -> Any:
        async with mcp_client(tokens["alice"]) as client:
            return next(t for t in (await client.list_tools()).tools if t.name == "memory_export").input_schema

    properties = run(schema())["properties"]
    assert set(properties) == {"format", "redacted", "project"}  # the request context is injected, not an argument
    description = properties["project"]["description"]
    assert "required unless this connection names a project or your token has a default project" in description
    for result in (missing, blank):
        assert result.is_error and "project: required" in text_of(result)
        assert "git origin" in text_of(result)
    assert not named.is_error and named.structured_content["memories"] == 4  # the control: a named project
    from accounts.tokens import token_create
    from palace.actors import Actor

    _, scoped = token_create(user=alice, label="in-project", project=PROJECT_ORIGIN, actor=Actor.for_user(alice))
    (default,) = run(call_each(scoped, [("memory_export", {})]))  # a token's default project names one project too
    assert not default.is_error and default.structured_content["palaces"] == 1
    document = json.loads(_download(default.structured_content["url"]).getvalue())
    assert [p["origin"] for p in document["palaces"]] == [project.origin_key]


def test_memory_export_link_host_is_the_request_host_or_atrium_public_url(
    tokens: dict[str, str], alice: Any, project: Palace, settings: Any
) -> None:
    build_world(alice, project)
    vault = {"project": PROJECT_ORIGIN, "format": "markdown"}
    settings.ATRIUM_PUBLIC_URL = ""

    async def via(url: str) -> Any:
        async with mcp_client(tokens["alice"], url=url) as client:
            return await client.call_tool("memory_export", vault)

    on_testserver = run(via("http://testserver/mcp")).structured_content["url"]
    on_localhost = run(via("http://localhost:8123/mcp")).structured_content["url"]
    assert on_testserver.startswith("http://testserver/api/v1/export/download?token=")
    assert on_localhost.startswith("http://localhost:8123/api/v1/export/download?token=")
    settings.ATRIUM_PUBLIC_URL = "https://atrium.example.com/"
    public = run(via("http://localhost:8123/mcp")).structured_content["url"]
    assert public.startswith("https://atrium.example.com/api/v1/export/download?token=")
    assert "127.0.0.1:8000" not in on_testserver + on_localhost + public
    assert _download(public).status_code == 200  # the link on the public host is the same route
