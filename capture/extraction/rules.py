"""The rule extractor (English and Chinese)."""

from __future__ import annotations

from capture.extraction.candidate import Candidate


def rule_facts(text: str, *, limit: int) -> list[Candidate]:
    raise NotImplementedError
