"""Reading `atrium eval` datasets: transcripts (LoCoMo turns) and facts (agent-written memories), validated up front.

Harness code (it belongs with the eval command, in the ops app once that exists). Formats:
../shared/bench/README.md. Every line of the file is one conversation:

- transcripts: ``{"conversation_id", "turns": [{"id", "session", "session_time", "speaker"?, "text",
  "image_caption"?}], "questions": [...]}``;
- facts: ``{"conversation_id", "memories": [{"id", "text", "session_time", "evidence": [turn ids]}],
  "questions": [...]}``;
- questions: ``{"id"?, "question", "evidence": [turn ids], "category"?: int}`` (answers are never read).

The whole file is checked before anything is saved, and every problem is a :class:`DatasetError` whose message is
one line naming the line, the item and what is wrong, so the command can print it instead of a traceback.
``session_time`` is ISO 8601 (a date, or a date and time, with or without a zone; no zone means UTC) or LoCoMo's
"1:56 pm on 8 May, 2023".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from pathlib import Path
from typing import Any

__all__ = ["Conversation", "DatasetError", "Memo", "Question", "Turn", "load_dataset", "parse_session_time"]

TRANSCRIPTS = "transcripts"
FACTS = "facts"
_LOCOMO_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y")


class DatasetError(ValueError):
    """The dataset is not in the expected format; the message (one line) says where and what."""


def parse_session_time(text: str) -> datetime:
    """An aware datetime from ISO 8601 ("2023-05-08", "2023-05-08T13:56:00+02:00", "…Z") or LoCoMo's
    "1:56 pm on 8 May, 2023". A time without a zone is taken as UTC (the datasets name none)."""
    raw = text.strip()
    for fmt in _LOCOMO_FORMATS:
        try:
            return datetime.strptime(raw, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise DatasetError(
            f"unparseable session_time {text!r} (expected ISO 8601 such as 2023-05-08 or 2023-05-08T13:56:00Z, "
            "or LoCoMo's '1:56 pm on 8 May, 2023')"
        ) from None
    if len(raw) <= 10:  # a bare date: midnight
        moment = datetime.combine(moment.date(), time(0, 0))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Turn:
    id: str
    session: str
    time: datetime
    speaker: str
    text: str  # with the image caption appended as "[image: …]" when the turn shared one


@dataclass(frozen=True)
class Memo:
    """One fact-style memory: saved as its text alone, at `time`; `evidence` is read only when scoring."""

    id: str
    text: str
    time: datetime
    session: str  # the session_time as written: facts of one session share it
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass
class Conversation:
    id: str
    kind: str  # TRANSCRIPTS or FACTS
    turns: list[Turn] = field(default_factory=list)
    memories: list[Memo] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    def known_turns(self) -> set[str]:
        """The turn ids evidence can point at: every turn, or every turn some memory cites."""
        if self.kind == TRANSCRIPTS:
            return {t.id for t in self.turns}
        return {e for m in self.memories for e in m.evidence}


def turn_content(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    caption = str(turn.get("image_caption") or "").strip()
    return f"{text} [image: {caption}]" if caption else text


def _text(item: dict[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = item.get(key)
    if value is None and not required:
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or (required and not value.strip()):
        raise DatasetError(f"{where}: `{key}` must be a non-empty string")
    return value


def _ids(item: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = item.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DatasetError(f"{where}: `{key}` must be a list of turn ids (strings)")
    return tuple(value)


def _time(item: dict[str, Any], where: str) -> datetime:
    try:
        return parse_session_time(_text(item, "session_time", where))
    except DatasetError as exc:
        raise DatasetError(f"{where}: {exc}") from None


def _objects(conv: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
    items = conv.get(key)
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise DatasetError(f"{where}: `{key}` must be a list of objects")
    return items


def _turn(item: dict[str, Any], where: str) -> Turn:
    session = item.get("session")
    if not isinstance(session, int | str) or isinstance(session, bool) or str(session) == "":
        raise DatasetError(f"{where}: `session` must be a number or a string")
    return Turn(
        id=_text(item, "id", where),
        session=str(session),
        time=_time(item, where),
        speaker=_text(item, "speaker", where, required=False),
        text=_text(item, "text", where) and turn_content(item),
    )


def _memo(item: dict[str, Any], where: str) -> Memo:
    return Memo(
        id=_text(item, "id", where),
        text=_text(item, "text", where),
        time=_time(item, where),
        session=_text(item, "session_time", where).strip(),
        evidence=_ids(item, "evidence", where),
    )


def _question(item: dict[str, Any], where: str, index: int, conv_id: str) -> Question:
    category = item.get("category", 0)
    if not isinstance(category, int) or isinstance(category, bool):
        raise DatasetError(f"{where}: `category` must be an integer")
    return Question(
        id=_text(item, "id", where, required=False) or f"{conv_id}:q{index}",
        text=_text(item, "question", where),
        evidence=_ids(item, "evidence", where),
        category=category,
    )


def _conversation(raw: Any, number: int) -> Conversation:
    where = f"line {number}"
    if not isinstance(raw, dict):
        raise DatasetError(f"{where}: a conversation must be a JSON object")
    if "conversation_id" not in raw or "questions" not in raw or ("turns" in raw) == ("memories" in raw):
        raise DatasetError(f"{where}: needs conversation_id, questions, and either turns or memories")
    conv_id = _text(raw, "conversation_id", where)
    where = f"line {number} ({conv_id})"
    kind = TRANSCRIPTS if "turns" in raw else FACTS
    conv = Conversation(id=conv_id, kind=kind)
    units = _objects(raw, "turns" if kind == TRANSCRIPTS else "memories", where)
    if not units:
        raise DatasetError(f"{where}: no {'turns' if kind == TRANSCRIPTS else 'memories'}")
    for i, item in enumerate(units):
        if kind == TRANSCRIPTS:
            conv.turns.append(_turn(item, f"{where}, turn {i} ({item.get('id', '?')})"))
        else:
            conv.memories.append(_memo(item, f"{where}, memory {i} ({item.get('id', '?')})"))
    for i, item in enumerate(_objects(raw, "questions", where)):
        conv.questions.append(_question(item, f"{where}, question {i}", i, conv_id))
    ids = [u.id for u in (conv.turns or conv.memories)]
    if len(set(ids)) != len(ids):
        raise DatasetError(f"{where}: two {'turns' if kind == TRANSCRIPTS else 'memories'} share an id")
    return conv


def load_dataset(path: str | Path) -> list[Conversation]:
    """Read and check the whole file; raise DatasetError (one line) on the first problem, OSError if unreadable."""
    conversations: list[Conversation] = []
    try:
        with Path(path).open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    raw = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetError(f"line {number}: not JSON ({exc.msg} at column {exc.colno})") from None
                conversations.append(_conversation(raw, number))
    except UnicodeDecodeError:
        raise DatasetError("the file is not UTF-8 text") from None
    if not conversations:
        raise DatasetError("the dataset holds no conversation")
    kinds = {c.kind for c in conversations}
    if len(kinds) > 1:
        raise DatasetError("the file mixes transcripts (turns) and facts (memories): use one kind per file")
    seen: set[str] = set()
    for conv in conversations:
        if conv.id in seen:
            raise DatasetError(f"conversation {conv.id!r} appears twice")
        seen.add(conv.id)
    return conversations
