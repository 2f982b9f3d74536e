"""Fact extraction and session summaries by the optional chat model (memory.providers, purpose "capture")."""

from __future__ import annotations

from capture.extraction.candidate import Candidate


class ExtractionModelError(Exception):
    """The model gave no usable answer (timeout, unreachable, invalid reply); the message says which. Callers fall
    back to the rules."""


def llm_facts(text: str, *, role: str, limit: int) -> list[Candidate]:
    raise NotImplementedError
