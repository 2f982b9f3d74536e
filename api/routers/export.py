"""Export and import (issue 16): GET /export downloads what the caller may read; GET /export/download follows a
signed, single-use link from MCP `memory_export`; POST /import loads a JSON export into the caller's palaces."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal, cast

from asgiref.sync import sync_to_async
from django.http import HttpRequest, StreamingHttpResponse
from ninja import Body, Router, Schema
from pydantic import ConfigDict

from api.auth import caller_of
from api.schemas import ErrorOut
from ops.portability import ExportStream, export_stream, import_document, link_download

router = Router(tags=["export"])
import_router = Router(tags=["export"])


class ChunkedDownload(StreamingHttpResponse):
    """A download sent while it is read. Under ASGI, Django collects a synchronous iterator whole before sending it
    (StreamingHttpResponse.__aiter__), which would hold the export in memory after all: this one pulls each chunk
    on the request's own thread (thread-sensitive, so with the request's database connection) and sends it before
    asking for the next. Under WSGI and Django's test client it iterates as any StreamingHttpResponse."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = cast(Iterator[bytes], self.streaming_content)  # synchronous: _attachment gives it one
        pull = sync_to_async(_next_chunk, thread_sensitive=True)
        while (chunk := await pull(chunks)) is not None:
            yield chunk


def _next_chunk(chunks: Iterator[bytes]) -> bytes | None:
    return next(chunks, None)


def _attachment(stream: ExportStream) -> ChunkedDownload:
    response = ChunkedDownload(stream.chunks, content_type=stream.content_type)
    response["Content-Disposition"] = f'attachment; filename="{stream.filename}"'
    response["Cache-Control"] = "no-store"
    return response


@router.get("", response={200: None, 401: ErrorOut, 404: ErrorOut, 422: ErrorOut})
def export(
    request: HttpRequest,
    format: Literal["json", "markdown"] = "json",
    redacted: bool = False,
    project: str | None = None,
) -> ChunkedDownload:
    """Everything you may read (or one `project`, by git origin) as JSON (lossless, importable with
    `atrium import`) or a Markdown vault (zip). `redacted=true`: a second redaction pass, 40-character previews.
    The JSON is streamed as it is read."""
    caller = caller_of(request)
    return _attachment(export_stream(user=caller.user, fmt=format, project=project, redacted=redacted))


@router.get("/download", auth=None, response={200: None, 404: ErrorOut, 422: ErrorOut})
def export_download(request: HttpRequest, token: str) -> ChunkedDownload:
    """Follow a download link from MCP `memory_export`: valid for 10 minutes and for one download, while the API
    token that made it is live (revoking the token ends its links). The link's token is the credential; a used,
    expired, revoked or changed one answers 404."""
    return _attachment(link_download(token))


class ExportDocumentIn(Schema):
    """The envelope of a JSON export (`GET /export`), as the import reads it; each palace section is checked by the
    import itself (ops/portability/importing.py), which refuses what it cannot load with a 422 that says why."""

    model_config = ConfigDict(extra="allow")

    format: Literal["atrium-export"]
    version: Literal[1]
    redacted: Literal[False] = False
    palaces: list[dict[str, Any]]


@import_router.post("", response={200: dict[str, Any], 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut})
def import_export(request: HttpRequest, payload: Body[ExportDocumentIn], project: str | None = None) -> dict[str, Any]:
    """Load a JSON export (the body, as `GET /export` gave it): into a palace that holds nothing yet, every row as it
    was (new ids); into one with memories, each active memory through the write pipeline, with the dispositions.
    `project` (git origin) puts a one-palace export there (created with you as owner if it does not exist);
    otherwise personal goes to your palace and each project to its own. Larger files: `atrium import`."""
    caller = caller_of(request)
    caller.require_write()
    document = payload.model_dump(mode="json")
    report = import_document(document=document, user=caller.user, project=project, actor=caller.actor, source="rest")
    return report.as_dict()
