"""MCP memory_export through the official client: inline JSON when small, a signed link that downloads the same
export otherwise; an outsider's project is not found (the owner's positive control)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.test import Client

from api.mcp.tools import export as export_tool
from palace.models import Palace
from tests.api.mcp.conftest import call_each, run, text_of
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
    (large,) = run(call_each(tokens["alice"], [("memory_export", {})]))
    assert large.structured_content["url"] and large.structured_content["document"] is None
