"""One captured turn end to end (scrub, condense, extract) and the one-sentence session summary.

What a turn keeps, by capture mode (issue 25, the seed's numbers):

====== ==================== ===================== =========================
mode   user turn            assistant turn        tool turn
====== ==================== ===================== =========================
off    nothing              nothing               nothing
light  episode + ≤ 2 facts  nothing               nothing
eager  episode + ≤ 5 facts  episode + ≤ 5 facts   nothing
====== ==================== ===================== =========================

Tool output is never stored verbatim (a tool turn keeps nothing; tool output inside a turn is elided by
:func:`condense_episode`). Facts come from the model when one is configured for capture, else from the rules
(``fallback_reason`` "no model configured"); a model that fails or times out falls back to the rules with its reason.
By the rules, an assistant turn yields only what the assistant states, not what it proposes or asks of the person:
the ``decided`` and ``correction`` patterns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from capture.extraction.candidate import FACT_LIMITS, MODES, Candidate
from capture.extraction.condense import condense_episode
from capture.extraction.echo import client_notice, scrub_echo
from capture.extraction.llm import SUMMARY_CHARS, ExtractionModelError, capture_model, llm_facts, llm_summary
from capture.extraction.rules import rule_facts
from memory.text import truncate_to_chars

Method = Literal["llm", "rules"]
ROLES = ("user", "assistant", "tool")
ASSISTANT_RULES = frozenset({"decided", "correction"})
NO_MODEL = "no model configured"

_GREETING = re.compile(
    r"^(?:hi|hello|hey|yo|thanks|thank you|thx|ok(?:ay)?|good (?:morning|afternoon|evening)|continue|go on|yes|no"
    r"|你好|您好|嗨|谢谢|好的|继续|早上好)\b[\s!.,。！，~]*",
    re.IGNORECASE,
)
# Claude Code records a slash command and its local output as user messages in these tags.
_COMMAND_TAGS = re.compile(r"<(command-[a-z]+|local-command-[a-z]+)>.*?</\1>", re.DOTALL)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
_MARKERS = ("[code:", "[log:", "[atrium ")


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
    """The episode and candidate facts of one turn (module docstring: what each mode keeps)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    scrubbed = scrub_echo(text)
    skipped = _not_kept(role=role, mode=mode) or client_notice(scrubbed.text)
    if skipped:
        return TurnExtraction(episode="", facts=[], method="rules", fallback_reason=skipped, echoes=scrubbed.removed)
    episode = condense_episode(scrubbed.text)
    if not episode:
        return TurnExtraction(
            episode="", facts=[], method="rules", fallback_reason="empty turn", echoes=scrubbed.removed
        )
    limit = FACT_LIMITS[mode]
    reason = NO_MODEL
    if capture_model() is not None:
        try:
            facts = llm_facts(scrubbed.text, role=role, limit=limit)
        except ExtractionModelError as exc:
            reason = exc.reason
        else:
            return TurnExtraction(episode=episode, facts=facts, method="llm", echoes=scrubbed.removed)
    facts = rule_facts(scrubbed.text, limit=limit if role == "user" else 50)
    if role == "assistant":
        facts = [fact for fact in facts if fact.pattern in ASSISTANT_RULES][:limit]
    return TurnExtraction(episode=episode, facts=facts, method="rules", fallback_reason=reason, echoes=scrubbed.removed)


def _not_kept(*, role: str, mode: str) -> str:
    """Why a turn keeps nothing in this mode, or "" when it is kept."""
    if mode == "off":
        return "capture is off"
    if role == "tool":
        return "tool output is never captured"
    if role == "assistant" and mode == "light":
        return "light mode keeps user turns only"
    return ""


def summarize_session(*, turns: list[tuple[str, str]]) -> Summary:
    """One sentence (≤ 160 characters) for a session of ``(role, text)`` turns: by the model when one is configured,
    else (and when it fails) the first substantive user message, condensed, labelled "rules"."""
    reason = NO_MODEL
    if capture_model() is not None:
        try:
            text = llm_summary(turns)
        except ExtractionModelError as exc:
            reason = exc.reason
        else:
            return Summary(text=truncate_to_chars(text, SUMMARY_CHARS), method="llm")
    return Summary(text=rule_summary(turns), method="rules", fallback_reason=reason)


def rule_summary(turns: list[tuple[str, str]]) -> str:
    """The first substantive user message (not a greeting, a slash command or a few words), its first sentence
    (or two when the first is short), cut to 160 characters on a word; "" when the session has none."""
    for role, text in turns:
        if role != "user":
            continue
        body = _COMMAND_TAGS.sub("", scrub_echo(text).text)
        body = re.sub(r"\[atrium [a-z_]+ output omitted\]", "", body).strip()
        if not _substantive(body):
            continue
        condensed = condense_episode(body, limit=SUMMARY_CHARS * 4)
        pieces = [p.strip() for p in _SENTENCE.split(condensed) if p.strip() and not p.startswith(_MARKERS)]
        if not pieces:
            continue
        line = pieces[0]
        if len(pieces) > 1 and not _substantive(line, words=6, cjk=12):  # a short opener: take the next one too
            line += ("" if _CJK.search(line[-1]) else " ") + pieces[1]
        return truncate_to_chars(" ".join(line.split()), SUMMARY_CHARS)
    return ""


def _substantive(body: str, *, words: int = 4, cjk: int = 6) -> bool:
    """Not a slash command, Claude Code's local-command caveat, a greeting, or fewer than ``words`` words (``cjk``
    Chinese characters)."""
    if not body or body.startswith(("/", "Caveat:")):
        return False
    rest = _GREETING.sub("", body, count=1).strip()
    if not rest:
        return False
    return len(re.findall(r"[A-Za-z0-9][\w'-]*", rest)) >= words or len(_CJK.findall(rest)) >= cjk
