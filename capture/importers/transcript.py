"""The shape every importer produces: a session of numbered turns, and what it skipped."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

Role = Literal["user", "assistant", "tool"]
Client = Literal["claude-code", "codex", "openai"]


class TranscriptError(ValueError):
    """The file (or upload) cannot be read as any transcript format we know. Content problems inside a readable
    file never raise: they are skipped and counted in `Session.skipped`."""


@dataclass(frozen=True)
class Turn:
    """One turn in order. `index` is its position among the session's turns, 0-based and stable: reading the same
    file again, or the file with more records appended, gives the earlier turns the same index (capture keys on it).
    A `tool` turn names the tool and has empty text: tool input and output are never kept."""

    index: int
    role: Role
    text: str
    tool: str | None = None
    at: datetime | None = None


@dataclass
class Session:
    """One agent session. A Claude Code subagent (sidechain) is its own session with `is_sidechain` set and the id
    `<parent session id>/<agent id>`; a Codex subagent rollout is flagged the same way."""

    session_id: str
    client: Client
    cwd: str | None
    is_sidechain: bool
    started_at: datetime | None
    ended_at: datetime | None
    turns: list[Turn] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    source_name: str = ""
    title: str | None = None  # the client's own one-line summary of the session, when it wrote one

    def add(self, role: Role, text: str, *, tool: str | None = None, at: datetime | None = None) -> Turn:
        turn = Turn(index=len(self.turns), role=role, text=text, tool=tool, at=at)
        self.turns.append(turn)
        self.seen(at)
        return turn

    def seen(self, at: datetime | None) -> None:
        """Widen the session's time span to include `at`."""
        if at is None:
            return
        if self.started_at is None or at < self.started_at:
            self.started_at = at
        if self.ended_at is None or at > self.ended_at:
            self.ended_at = at


def parse_time(value: object) -> datetime | None:
    """An ISO 8601 timestamp (a trailing Z included) or epoch seconds as an aware UTC datetime; None when absent or
    unreadable (a bad timestamp is not a reason to drop a turn)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def text_of(content: object, *, part_types: frozenset[str] = frozenset({"text", "input_text", "output_text"})) -> str:
    """The plain text of a message's content: a string, or the text parts of a list of blocks (other parts such as
    images, tool calls and thinking are not text)."""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    parts = [
        block["text"]
        for block in content
        if isinstance(block, dict) and block.get("type") in part_types and isinstance(block.get("text"), str)
    ]
    return "\n\n".join(part.strip() for part in parts if part.strip())
