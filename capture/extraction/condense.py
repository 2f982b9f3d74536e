"""Episode condensing: a long turn's gist, deterministic."""

from __future__ import annotations


def condense_episode(text: str, *, limit: int = 600) -> str:
    raise NotImplementedError
