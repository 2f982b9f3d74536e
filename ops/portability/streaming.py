"""The export as a stream of bytes, for downloads (REST `GET /export` and the export link): a palace's rows are read
a page at a time through server-side cursors (exporting.table_rows) and written out as they come, so the server's
memory does not grow with the palace.

The JSON bytes are exactly those of `json.dumps(export_document(...), ensure_ascii=False, indent=1)`, the document
the command and MCP build whole: the envelope and each row go through `json.dumps` with the same options, and the
lists of rows are written around them with the same indentation and separators. The redacted view streams too
(each row redacted as it passes). The Markdown vault needs a palace's links and index before its files, so it is
built whole and sent as one part.

Which palaces an export covers is settled before the first byte (NotFound then is a 404, not a cut-off download);
every later step reads as the exporter (row-level security acts as them for each chunk), since the request's own
context has ended by the time a streamed body is read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from ops.portability.exporting import (
    TABLES,
    document_envelope,
    export_document,
    palace_header,
    palaces_for_export,
    redact_tree,
    table_rows,
)
from ops.portability.markdown import markdown_zip
from palace import rls
from palace.errors import InvalidInput
from palace.models import Palace

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

FORMATS = ("json", "markdown")
CHUNK_BYTES = 64 * 1024  # one write to the client: large enough to keep the per-chunk overhead small


class Rows:
    """A list in the document that is read while it is written (palaces, a palace's rows)."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items


def json_parts(value: Any, level: int = 0) -> Iterator[str]:
    """`value` as `json.dumps(value, ensure_ascii=False, indent=1)` writes it at nesting `level`, where `value` may
    be `Rows` or a dict with `Rows` among its values (a dict holds string keys only: the document's do)."""
    pad = "\n" + " " * level
    if isinstance(value, Rows):
        empty = True
        for item in value.items:
            yield ("[" if empty else ",") + pad + " "
            yield from json_parts(item, level + 1)
            empty = False
        yield "[]" if empty else pad + "]"
    elif isinstance(value, dict) and value and any(isinstance(v, Rows) for v in value.values()):
        sep = "{"
        for key, item in value.items():
            yield f"{sep}{pad} {json.dumps(key, ensure_ascii=False)}: "
            yield from json_parts(item, level + 1)
            sep = ","
        yield pad + "}"
    else:
        # JSON strings hold no raw newline, so every newline here is indentation: shift it to this level.
        yield json.dumps(value, ensure_ascii=False, indent=1).replace("\n", pad)


def in_chunks(parts: Iterable[str]) -> Iterator[bytes]:
    """The parts as UTF-8, gathered into chunks of at least CHUNK_BYTES (the last one smaller)."""
    size = CHUNK_BYTES
    buffer: list[bytes] = []
    held = 0
    for part in parts:
        data = part.encode()
        buffer.append(data)
        held += len(data)
        if held >= size:
            yield b"".join(buffer)
            buffer, held = [], 0
    if buffer:
        yield b"".join(buffer)


class ActingChunks:
    """Iterates `chunks` with row-level security acting as `user` for each step (and only then: between steps the
    request's thread holds no context of this export)."""

    def __init__(self, chunks: Iterator[bytes], user: AbstractBaseUser) -> None:
        self.chunks = chunks
        self.user = user

    def __iter__(self) -> ActingChunks:
        return self

    def __next__(self) -> bytes:
        with rls.acting_as(self.user):
            return next(self.chunks)

    def close(self) -> None:
        close = getattr(self.chunks, "close", None)
        if close is not None:
            close()


@dataclass(frozen=True)
class ExportStream:
    chunks: ActingChunks
    content_type: str
    filename: str


def _section(palace: Palace, exporter: AbstractBaseUser, redacted: bool) -> dict[str, Any]:
    section: dict[str, Any] = palace_header(palace)
    if redacted:
        section = redact_tree(section)
    for table in TABLES:
        rows = table_rows(table, palace, exporter)
        section[table.section] = Rows(map(redact_tree, rows) if redacted else rows)
    return section


def _json_document(
    *, user: AbstractBaseUser, palaces: list[Palace], project: str | None, redacted: bool, now: datetime
) -> Iterator[bytes]:
    document = document_envelope(user=user, project=project, redacted=redacted, now=now)
    sections = (_section(p, user, redacted) for p in palaces)
    document["palaces"] = Rows(sections)
    yield from in_chunks(json_parts(document))


def _markdown_document(*, user: AbstractBaseUser, project: str | None, redacted: bool) -> Iterator[bytes]:
    yield markdown_zip(export_document(user=user, project=project, redacted=redacted))


def export_filename(*, user: AbstractBaseUser, fmt: str, redacted: bool) -> str:
    stem = f"atrium-{user.get_username()}{'-redacted' if redacted else ''}"
    return f"{stem}.zip" if fmt == "markdown" else f"{stem}.json"


def export_stream(
    *, user: AbstractBaseUser, fmt: str, project: str | None, redacted: bool, now: datetime | None = None
) -> ExportStream:
    """The export as chunks of bytes, read while they are sent; which palaces it covers is checked now (NotFound,
    InvalidInput for a format that is not one of FORMATS)."""
    if fmt not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}", field="format")
    project = project or None
    with rls.acting_as(user):
        palaces = palaces_for_export(user=user, project=project)
    filename = export_filename(user=user, fmt=fmt, redacted=redacted)
    if fmt == "markdown":
        chunks = _markdown_document(user=user, project=project, redacted=redacted)
        return ExportStream(ActingChunks(chunks, user), "application/zip", filename)
    now = now or timezone.now()
    chunks = _json_document(user=user, palaces=palaces, project=project, redacted=redacted, now=now)
    return ExportStream(ActingChunks(chunks, user), "application/json", filename)
