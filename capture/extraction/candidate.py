"""What every extractor returns: a candidate fact, not yet saved, with the kind of memory it would be and the
pattern (a rule's name, or "llm") that found it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["fact", "preference", "decision", "skill"]
KINDS: tuple[Kind, ...] = ("fact", "preference", "decision", "skill")

# Capture modes (issue 25): off stores nothing, light reads user turns (≤ 2 facts a turn), eager assistant turns
# too (≤ 5 a turn). The seed's numbers (dsh-engram: ingest off | light | eager).
Mode = Literal["off", "light", "eager"]
MODES: tuple[Mode, ...] = ("off", "light", "eager")
FACT_LIMITS: dict[str, int] = {"off": 0, "light": 2, "eager": 5}


@dataclass(frozen=True)
class Candidate:
    """A candidate fact: a standalone sentence, the kind of memory it would be, the pattern that found it (a rule's
    name from capture.extraction.rules, or "llm") and how sure the extractor is (0–1)."""

    content: str
    kind: Kind
    pattern: str
    confidence: float
