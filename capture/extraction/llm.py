"""Fact extraction and session summaries by the optional chat model (memory.providers, purpose "capture").

One ask per turn (or per session, for the summary), answered as JSON against a strict schema. Every failure (no
model configured, a timeout, an unreachable endpoint, a reply that is not the schema) raises
:class:`ExtractionModelError` with a reason that starts with a stable word (``no model configured``, ``timeout``,
``unreachable``, ``invalid answer``, ``model error``); the caller falls back to the rules and records the reason.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from capture.extraction.candidate import KINDS, Candidate
from capture.extraction.condense import condense_episode
from capture.extraction.echo import scrub_echo
from memory.providers import LLMConfig, LLMError, LLMSchemaError, LLMTimeoutError, chat_json, llm_config

PURPOSE = "capture"
CONFIDENCE = 0.6  # a model's candidate: still low, the write pipeline's disposition decides
MAX_INPUT_CHARS = 8000  # a longer turn is condensed first: tool output and code say little about the person
SUMMARY_CHARS = 160
_PLACEHOLDER = re.compile(r"\[atrium [a-z_]+ output omitted\]")

FACTS_SYSTEM = """You extract long-term memories from one turn of a conversation between a person and an AI agent.

Return at most {limit} facts worth remembering in later sessions, and only those the turn itself states:
- preferences (how the person likes things done), decisions (what was decided, not proposed),
- standing rules ("always", "never", "from now on"), things the person asks to be remembered,
- corrections of something said earlier, and stable facts about the person, the team or the project.
Each fact is one standalone sentence in the turn's language that makes sense without the conversation: name the
thing, no "it" or "this". kind is "preference", "decision", "skill" (a reusable procedure) or "fact".

Do not return questions, hypotheticals, proposals still under discussion, code, tool output, greetings, or the
agent's narration of what it is doing. Restating memory is not new information: text recalled from memory (shown
as placeholders such as [atrium memory_search output omitted], or anything the turn quotes from recalled memory) is
never a fact to return. When nothing qualifies, return an empty list."""

SUMMARY_SYSTEM = """You summarise one working session between a person and an AI agent for a list of sessions.

Write one sentence of at most 160 characters, in the session's language, that says what the session was about
(the task or question and, if any, its outcome). No preamble, no quotes. Placeholders such as
[atrium memory_search output omitted] are recalled memory, not the session's subject."""

FACTS_SCHEMA = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"content": {"type": "string"}, "kind": {"type": "string", "enum": list(KINDS)}},
                "required": ["content", "kind"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["facts"],
    "additionalProperties": False,
}
SUMMARY_SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
    "additionalProperties": False,
}


class _Fact(BaseModel):
    content: str = Field(max_length=1000)
    kind: Literal["fact", "preference", "decision", "skill"]


class _Facts(BaseModel):
    facts: list[_Fact] = Field(max_length=50)


class _Summary(BaseModel):
    summary: str = Field(max_length=2000)


class ExtractionModelError(Exception):
    """The model gave no usable answer; ``reason`` (also the message) starts with a stable word: ``no model
    configured``, ``timeout``, ``unreachable``, ``invalid answer`` or ``model error``. Callers fall back to the
    rules and record it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def capture_model() -> LLMConfig | None:
    """The chat model for capture, or None when none is configured."""
    return llm_config(PURPOSE)


def llm_facts(text: str, *, role: str, limit: int) -> list[Candidate]:
    """Up to ``limit`` standalone facts the model finds in one turn (``role``: user or assistant), echoes scrubbed
    first; labelled ``pattern="llm"``. Raises :class:`ExtractionModelError` when the model gives no usable answer."""
    if role not in ("user", "assistant"):
        raise ValueError(f"role must be 'user' or 'assistant', got {role!r}")
    if limit < 0:
        raise ValueError(f"limit must be at least 0, got {limit}")
    turn = condense_episode(scrub_echo(text).text, limit=MAX_INPUT_CHARS)
    if limit == 0 or not turn:
        return []
    answer = _ask(
        system=FACTS_SYSTEM.format(limit=limit),
        user=f"Role of the speaker: {role}\n\nThe turn:\n{turn}",
        schema_name="capture_facts",
        schema=FACTS_SCHEMA,
        validator=_Facts,
    )
    out: list[Candidate] = []
    seen: set[str] = set()
    for fact in answer.facts:
        content = " ".join(fact.content.split())
        # A fact built from a placeholder is memory restating itself, whatever the model thought.
        if not content or _PLACEHOLDER.search(content) or content.casefold() in seen:
            continue
        seen.add(content.casefold())
        out.append(Candidate(content=content, kind=fact.kind, pattern="llm", confidence=CONFIDENCE))
    return out[:limit]


def llm_summary(turns: list[tuple[str, str]], *, budget: int = MAX_INPUT_CHARS) -> str:
    """One sentence (≤ 160 characters) about a session, by the model; raises :class:`ExtractionModelError`."""
    lines: list[str] = []
    size = 0
    for role, text in turns:
        if role not in ("user", "assistant"):
            continue  # tool output is never the subject
        line = f"{role}: {condense_episode(scrub_echo(text).text, limit=400)}"
        if size + len(line) > budget:
            break
        lines.append(line)
        size += len(line) + 1
    if not lines:
        raise ExtractionModelError("invalid answer: nothing to summarise")
    answer = _ask(
        system=SUMMARY_SYSTEM,
        user="\n".join(lines),
        schema_name="capture_summary",
        schema=SUMMARY_SCHEMA,
        validator=_Summary,
    )
    summary = " ".join(answer.summary.split())
    if not summary:
        raise ExtractionModelError("invalid answer: an empty summary")
    return summary


def _ask[M: BaseModel](*, system: str, user: str, schema_name: str, schema: dict[str, object], validator: type[M]) -> M:
    config = capture_model()
    if config is None:
        raise ExtractionModelError("no model configured")
    try:
        return chat_json(
            config=config, system=system, user=user, schema_name=schema_name, schema=schema, validator=validator
        )
    except LLMTimeoutError as exc:
        raise ExtractionModelError(f"timeout: {exc}") from None
    except LLMSchemaError as exc:
        raise ExtractionModelError(f"invalid answer: {exc}") from None
    except LLMError as exc:
        kind = type(exc).__name__
        if kind in ("LLMConnectionError", "LLMEgressRefused"):
            raise ExtractionModelError(f"unreachable: {exc}") from None
        if kind == "LLMBadResponseError":
            raise ExtractionModelError(f"invalid answer: {exc}") from None
        raise ExtractionModelError(f"model error: {exc}") from None
