"""Capture's extraction, pure (no models, no database): what a captured turn keeps.

- echo.py: anti-echo, :func:`scrub_echo` replaces Atrium's own recall inside a turn by a placeholder naming the tool;
- condense.py: :func:`condense_episode`, a long turn's gist;
- rules.py: :func:`rule_facts`, the documented patterns (English and Chinese) that find candidate facts;
- llm.py: :func:`llm_facts` and the session summary's prompt, through memory.providers (purpose "capture");
- turn.py: :func:`extract_turn` (scrub, condense, model or rules by mode) and :func:`summarize_session`.
"""

from __future__ import annotations

from capture.extraction.candidate import FACT_LIMITS, KINDS, MODES, Candidate, Kind, Mode
from capture.extraction.condense import condense_episode
from capture.extraction.echo import GENERATED_PREFIXES, INTERRUPTED, RECALL_TOOLS, Scrubbed, client_notice, scrub_echo
from capture.extraction.llm import ExtractionModelError, llm_facts
from capture.extraction.rules import rule_facts
from capture.extraction.turn import Method, Summary, TurnExtraction, extract_turn, summarize_session

__all__ = [
    "FACT_LIMITS",
    "GENERATED_PREFIXES",
    "INTERRUPTED",
    "KINDS",
    "MODES",
    "RECALL_TOOLS",
    "Candidate",
    "ExtractionModelError",
    "Kind",
    "Method",
    "Mode",
    "Scrubbed",
    "Summary",
    "TurnExtraction",
    "client_notice",
    "condense_episode",
    "extract_turn",
    "llm_facts",
    "rule_facts",
    "scrub_echo",
    "summarize_session",
]
