"""memory_export: one project the caller may read, as a single-use download link or, when small, the JSON inline.

The link is a credential the model sees, so it is held down (ops/portability/links.py): one project only (never
"everything readable"), 10 minutes, one download, bound to the API token that asked (revoking the token ends it),
and its host is ATRIUM_PUBLIC_URL or the one this request came in on — never a guessed address."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from api.mcp.registry import tool
from api.mcp.runner import ToolCall, run
from api.mcp.schemas import PalaceScoped
from ops.portability import LINK_SECONDS, export_file, link_token, link_url
from palace.errors import InvalidInput
from palace.models import Palace

INLINE_BYTES = 32_000  # a JSON export up to this size comes back inline; larger ones, and every vault, as a link


class ExportOut(PalaceScoped):
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
            description="Git origin of the project palace to export (required unless this connection names a "
            "project or your token has a default project).",
        ),
    ] = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, ExportOut]:
    """Export one project's memories (every field, versions, edges, rooms, review state, op log): name it with
    `project` (omitted: this connection's project, else your token's default project). A small JSON export comes
    back inline in `document`; otherwise `url` is a download link valid for 10 minutes and for ONE download, while
    this token is valid (give it to the person; it downloads without further credentials, so do not paste it
    anywhere public).
    Next: nothing; to move memories between servers, the person runs `atrium import FILE --user NAME`.
    """
    base = _request_base(ctx)
    return await run(lambda call: _export(call, fmt=format, redacted=redacted, project=project, base=base))


def _request_base(ctx: Context | None) -> str:
    """The scheme and host this request came in on (the SDK checked the Host against ALLOWED_HOSTS)."""
    request = getattr(ctx.request_context, "request", None) if ctx is not None else None
    url = getattr(request, "url", None)
    return f"{url.scheme}://{url.netloc}" if url is not None else ""


def _project(call: ToolCall, project: str | None) -> str:
    """The project to export: the one named (the argument, else this connection's), else the token's default
    project; never everything readable, and never the personal palace by default."""
    chosen = call.palace(project, write=False)
    if chosen.kind != Palace.Kind.PROJECT or not chosen.origin_key:
        raise InvalidInput(
            "project: required — send the git origin of one project you may read (e.g. github.com/acme/app); "
            "memory_export hands out one project at a time. Your personal palace and everything at once: "
            "GET /api/v1/export or the panel's Palace page",
            field="project",
        )
    return chosen.origin_key


def _export(call: ToolCall, *, fmt: str, redacted: bool, project: str | None, base: str) -> tuple[ExportOut, str]:
    project = _project(call, project)
    file = export_file(user=call.user, fmt=fmt, project=project, redacted=redacted)
    out = ExportOut(format=fmt, redacted=redacted, palaces=file.palaces, memories=file.memories, bytes=len(file.data))
    if fmt == "json" and len(file.data) <= INLINE_BYTES:
        out.document = json.loads(file.data)
        return out, f"Export of {out.memories} memories in {out.palaces} palace(s), inline in `document`."
    token = link_token(user=call.user, fmt=fmt, project=project, redacted=redacted, token_id=call.token_id)
    out.url = link_url(token=token, base=base)
    out.expires_in_seconds = LINK_SECONDS
    return out, (
        f"Export of {out.memories} memories in {out.palaces} palace(s), {out.bytes} bytes ({fmt}): download it"
        f" once, within {LINK_SECONDS // 60} minutes, from {out.url} (it stops working if this token is revoked)"
    )
