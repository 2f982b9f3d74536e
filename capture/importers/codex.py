"""Codex CLI rollouts."""

from __future__ import annotations

from capture.importers.transcript import Session


def parse_codex(text: str, *, source_name: str = "") -> list[Session]:
    """The session in one Codex rollout file (JSONL, or the older JSON layout)."""
    raise NotImplementedError
