"""One captured turn end to end (scrub, condense, extract) and the one-sentence session summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from capture.extraction.candidate import Candidate

Method = Literal["llm", "rules"]


@dataclass(frozen=True)
class TurnExtraction:
    """What capture keeps of one turn: the episode (condensed, echoes scrubbed; "" when the turn is not kept), the
    candidate facts, how they were found (method) and why not by the model when a fallback happened, and the
    placeholders' tool names for what anti-echo removed."""

    episode: str
    facts: list[Candidate]
    method: Method
    fallback_reason: str = ""
    echoes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Summary:
    """A session's one-sentence summary (≤ 160 characters), how it was made, and why not by the model."""

    text: str
    method: Method
    fallback_reason: str = ""


def extract_turn(*, text: str, role: str, mode: str) -> TurnExtraction:
    raise NotImplementedError


def summarize_session(*, turns: list[tuple[str, str]]) -> Summary:
    raise NotImplementedError
