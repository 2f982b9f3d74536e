"""memory_export: what the caller may read, as a short-lived download link or, when small, the JSON inline."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from django.conf import settings
from mcp_types import CallToolResult
from pydantic import Field

from api.mcp.registry import tool
from api.mcp.runner import ToolCall, run
from api.mcp.schemas import Out
from ops.portability import LINK_SECONDS, export_file, link_token

INLINE_BYTES = 32_000  # a JSON export up to this size comes back inline; larger ones, and every vault, as a link


class ExportOut(Out):
    format: str
    redacted: bool
    palaces: int
    memories: int
    bytes: int
    url: str | None = None
    expires_in_seconds: int | None = None
    document: dict[str, Any] | None = None


@tool("memory_export", title="Export memories (download link)")
async def memory_export(
    format: Annotated[
        Literal["json", "markdown"],
        Field(description="json: lossless, importable with `atrium import`; markdown: an Obsidian/Logseq vault (zip)."),
    ] = "json",
    redacted: Annotated[
        bool, Field(description="Shareable view: secrets redacted again, every text cut to 40 characters.")
    ] = False,
    project: Annotated[
        str | None,
        Field(
            default=None,
            max_length=400,
            description="Git origin of one project palace to export; omit for everything you may read.",
        ),
    ] = None,
) -> Annotated[CallToolResult, ExportOut]:
    """Export the memories you may read (every field, versions, edges, rooms, review state, op log). A small JSON
    export comes back inline in `document`; otherwise `url` is a download link valid for 10 minutes (give it to the
    person; it downloads without further credentials, so do not paste it anywhere public).
    Next: nothing; to move memories between servers, the person runs `atrium import FILE --user NAME`.
    """
    return await run(lambda call: _export(call, fmt=format, redacted=redacted, project=project))


def _export(call: ToolCall, *, fmt: str, redacted: bool, project: str | None) -> tuple[ExportOut, str]:
    project = (project or "").strip() or None
    file = export_file(user=call.user, fmt=fmt, project=project, redacted=redacted)
    out = ExportOut(format=fmt, redacted=redacted, palaces=file.palaces, memories=file.memories, bytes=len(file.data))
    if fmt == "json" and len(file.data) <= INLINE_BYTES:
        out.document = json.loads(file.data)
        return out, f"Export of {out.memories} memories in {out.palaces} palace(s), inline in `document`."
    token = link_token(user=call.user, fmt=fmt, project=project, redacted=redacted)
    base = (settings.ATRIUM_PUBLIC_URL or "http://127.0.0.1:8000").rstrip("/")
    out.url = f"{base}/api/v1/export/download?token={token}"
    out.expires_in_seconds = LINK_SECONDS
    return out, (
        f"Export of {out.memories} memories in {out.palaces} palace(s), {out.bytes} bytes ({fmt}): download it"
        f" within {LINK_SECONDS // 60} minutes from {out.url}"
    )
