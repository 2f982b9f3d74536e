"""Claude Code session JSONL (`~/.claude/projects/<escaped cwd>/<session id>.jsonl`).

Each line is a record: `user` and `assistant` records carry a `message` ({role, content}: a string or blocks of
text, tool_use, tool_result, thinking, image), with `sessionId`, `cwd`, `timestamp`, `uuid`, `parentUuid` and
`isSidechain`; `summary` records name the session (keyed by `leafUuid`, not by session); `system`,
`file-history-snapshot` and newer types carry no conversation and are counted. One assistant message is often
written as several records (one per content block) sharing `message.id`; their text is one turn.

Subagents (the Task tool) write sidechain records, either inside the parent's file (older versions) or in their own
`agent-<id>.jsonl` / `<session id>/subagents/agent-<id>.jsonl` files. Either way they become separate sessions,
flagged `is_sidechain`, with the id `<parent session id>/<agent id>` (or `/sidechain-<n>` when the records carry no
agent id, one per chain): a subagent's turns are the model talking to itself, so backfill rules can leave them out
without losing the parent's turns, and their indexes never collide with the parent's.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from capture.extraction import GENERATED_PREFIXES, INTERRUPTED
from capture.importers.jsonl import records
from capture.importers.transcript import Session, parse_time, text_of

# User messages Claude Code writes itself rather than the person: slash-command echoes, command output, caveats.


class _Reader:
    def __init__(self, source_name: str) -> None:
        self.source_name = source_name
        self.fallback_id = PurePosixPath(source_name).stem or "claude-code-session"
        self.sessions: dict[str, Session] = {}
        self.chain_of: dict[str, str] = {}  # record uuid -> session key, to follow sidechains
        self.last_message: dict[str, str] = {}  # session key -> message.id of its last assistant text turn
        self.chains = 0
        self.loose: Counter[str] = Counter()  # counts from records that name no session
        self.summaries: dict[str, str] = {}  # leafUuid -> summary

    def session_for(self, record: dict[str, Any]) -> Session:
        sid = str(record.get("sessionId") or self.fallback_id)
        key = sid
        if record.get("isSidechain") is True:
            agent = record.get("agentId")
            parent = record.get("parentUuid")
            if isinstance(agent, str) and agent:
                key = f"{sid}/{agent}"
            elif isinstance(parent, str) and parent in self.chain_of and self.chain_of[parent] != sid:
                key = self.chain_of[parent]
            else:
                self.chains += 1
                key = f"{sid}/sidechain-{self.chains}"
        if isinstance(record.get("uuid"), str):
            self.chain_of[record["uuid"]] = key
        session = self.sessions.get(key)
        if session is None:
            session = Session(
                session_id=key,
                client="claude-code",
                cwd=None,
                is_sidechain=key != sid,
                started_at=None,
                ended_at=None,
                source_name=self.source_name,
            )
            self.sessions[key] = session
        if session.cwd is None and isinstance(record.get("cwd"), str) and record["cwd"].strip():
            # The first cwd is where the session started; later records follow the agent's `cd`.
            session.cwd = record["cwd"].strip()
        return session

    def read(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == "summary":
            if isinstance(record.get("summary"), str) and isinstance(record.get("leafUuid"), str):
                self.summaries[record["leafUuid"]] = record["summary"].strip()
            self.loose["summary record"] += 1
            return
        if kind not in ("user", "assistant"):
            label = f"{kind} record" if isinstance(kind, str) and kind else "record without a type"
            if record.get("sessionId"):
                self.session_for(record).skipped[label] += 1
            else:
                self.loose[label] += 1
            return
        session = self.session_for(record)
        message = record.get("message")
        if not isinstance(message, dict):
            session.skipped[f"{kind} record without a message"] += 1
            return
        at = parse_time(record.get("timestamp"))
        if record.get("isMeta") is True:
            session.skipped["meta message"] += 1
            session.seen(at)
        elif record.get("isApiErrorMessage") is True:
            session.skipped["api error message"] += 1
        elif kind == "user":
            self.user(session, message.get("content"), at)
        else:
            self.assistant(session, message, at)

    def user(self, session: Session, content: object, at: datetime | None) -> None:
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    session.skipped["tool output dropped"] += 1
                elif isinstance(block, dict) and block.get("type") == "image":
                    session.skipped["image"] += 1
        text = text_of(content)
        if not text:
            session.seen(at)
            return
        if text.startswith(GENERATED_PREFIXES):
            session.skipped["command message"] += 1
        elif text.startswith(INTERRUPTED):
            session.skipped["interruption notice"] += 1
        else:
            session.add("user", text, at=at)
            self.last_message.pop(session.session_id, None)
            return
        session.seen(at)

    def assistant(self, session: Session, message: dict[str, Any], at: datetime | None) -> None:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        for block in blocks:
            if not isinstance(block, dict):
                session.skipped["assistant block unreadable"] += 1
                continue
            kind, body, name = block.get("type"), block.get("text"), block.get("name")
            if kind == "text" and isinstance(body, str):
                self.assistant_text(session, body.strip(), message_id, at)
            elif kind in ("tool_use", "server_tool_use"):
                session.add("tool", "", tool=name if isinstance(name, str) and name else "unknown", at=at)
                self.last_message.pop(session.session_id, None)
            elif kind in ("thinking", "redacted_thinking"):
                session.skipped["thinking"] += 1
            else:
                session.skipped[f"assistant block {kind if isinstance(kind, str) else 'unreadable'}"] += 1
        session.seen(at)

    def assistant_text(self, session: Session, text: str, message_id: str | None, at: datetime | None) -> None:
        if not text:
            return
        key = session.session_id
        last = session.turns[-1] if session.turns else None
        if message_id and last is not None and last.role == "assistant" and self.last_message.get(key) == message_id:
            # The same message continued in another record: one turn, same index.
            session.turns[-1] = dataclasses.replace(last, text=f"{last.text}\n\n{text}")
            session.seen(at)
            return
        session.add("assistant", text, at=at)
        if message_id:
            self.last_message[key] = message_id

    def finish(self) -> list[Session]:
        sessions = list(self.sessions.values())
        mains = [s for s in sessions if not s.is_sidechain]
        for leaf, summary in self.summaries.items():
            key = self.chain_of.get(leaf)
            target = self.sessions.get(key) if key else (mains[0] if len(mains) == 1 else None)
            if target is not None:
                target.title = summary
        if sessions and self.loose:
            (mains or sessions)[0].skipped.update(self.loose)
        return sessions


def parse_claude_code(text: str, *, source_name: str = "") -> list[Session]:
    """The sessions in one Claude Code JSONL file, main session first and then its sidechains, in the order they
    appear. Never raises on content: unknown records, broken lines and unreadable blocks are counted in `skipped`."""
    reader = _Reader(source_name)
    loose: Counter[str] = Counter()
    for record in records(text, loose):
        reader.read(record)
    reader.loose.update(loose)
    return reader.finish()
