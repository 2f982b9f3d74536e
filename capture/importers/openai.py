"""OpenAI-style `messages` JSON."""

from __future__ import annotations

from capture.importers.transcript import Session


def parse_openai_messages(text: str, *, source_name: str = "") -> list[Session]:
    """The session(s) in a `{"messages": [...]}` object, a bare list of messages, or a list of such objects."""
    raise NotImplementedError
