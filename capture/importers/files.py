"""Files, directories and uploads: format detection and safe archive reading."""

from __future__ import annotations

from pathlib import Path

from capture.importers.transcript import Session


def parse_path(path: Path, *, rejected: list[tuple[str, str]] | None = None) -> list[Session]:
    """The sessions in a transcript file, or in every *.jsonl / *.json file under a directory."""
    raise NotImplementedError


def parse_upload(name: str, data: bytes, *, rejected: list[tuple[str, str]] | None = None) -> list[Session]:
    """The sessions in an uploaded .jsonl/.json file or a .zip/.tar.gz archive of them."""
    raise NotImplementedError
