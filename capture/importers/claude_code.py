"""Claude Code session JSONL."""

from __future__ import annotations

from capture.importers.transcript import Session


def parse_claude_code(text: str, *, source_name: str = "") -> list[Session]:
    """The sessions in one Claude Code JSONL file."""
    raise NotImplementedError
