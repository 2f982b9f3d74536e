"""Portability: what a person may read as one JSON document, or its redacted view (exporting.py), as a Markdown vault
(markdown.py), streamed to a download (streaming.py), through a short-lived download link (links.py), and brought
back into a palace (importing.py)."""

from __future__ import annotations

from ops.portability.exporting import (
    FORMAT,
    PREVIEW_CHARS,
    SECTIONS,
    TABLES,
    VERSION,
    Table,
    export_document,
    exportable_fields,
)
from ops.portability.importing import OP_TARGETS, import_document
from ops.portability.links import (
    DOWNLOAD_PATH,
    LINK_SECONDS,
    ExportFile,
    export_file,
    link_download,
    link_open,
    link_token,
    link_url,
)
from ops.portability.markdown import markdown_zip
from ops.portability.streaming import ExportStream, export_stream

__all__ = [
    "DOWNLOAD_PATH",
    "FORMAT",
    "LINK_SECONDS",
    "OP_TARGETS",
    "PREVIEW_CHARS",
    "SECTIONS",
    "TABLES",
    "VERSION",
    "ExportFile",
    "ExportStream",
    "Table",
    "export_document",
    "export_file",
    "export_stream",
    "exportable_fields",
    "import_document",
    "link_download",
    "link_open",
    "link_token",
    "link_url",
    "markdown_zip",
]
