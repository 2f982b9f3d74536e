"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`).

Current layout: each line is `{timestamp, type, payload}` with `type` one of `session_meta` (id, cwd, timestamp;
`source`/`thread_source` mark a subagent), `response_item` (the model's items: `message` with `input_text` /
`output_text` parts, `function_call`, `custom_tool_call`, `local_shell_call`, their `*_output`, `reasoning`, …),
`event_msg` (UI events that repeat the messages), `turn_context` and `compacted`. Older layouts: JSONL whose first
line is the bare session meta (`{id, timestamp, instructions, git}`) followed by bare items and `{"record_type":
"state"}` lines, and a single JSON object `{"session": {...}, "items": [...]}`.

The user messages Codex writes itself (`<environment_context>`, `<user_instructions>`, the AGENTS.md text) are
counted, not kept: they are the same in every session and are nobody's words.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from capture.importers.jsonl import records
from capture.importers.transcript import Session, parse_time, text_of

_ENVELOPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_GENERATED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "# AGENTS.md instructions",
)
_TOOL_CALLS = {
    "function_call": None,
    "custom_tool_call": None,
    "local_shell_call": "local_shell",
    "web_search_call": "web_search",
    "image_generation_call": "image_generation",
    "tool_search_call": "tool_search",
}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def _item(session: Session, item: dict[str, Any], at: datetime | None) -> None:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        text = text_of(item.get("content"))
        if role not in ("user", "assistant"):
            session.skipped[f"{role if isinstance(role, str) else 'unknown'} message"] += 1
        elif not text:
            session.skipped["empty message"] += 1
        elif role == "user" and text.startswith(_GENERATED_PREFIXES):
            session.skipped["context message"] += 1
        else:
            session.add(role, text, at=at)
            return
    elif isinstance(kind, str) and kind in _TOOL_CALLS:
        name = item.get("name")
        session.add("tool", "", tool=name if isinstance(name, str) and name else _TOOL_CALLS[kind] or kind, at=at)
        return
    elif isinstance(kind, str) and kind.endswith("_output"):
        session.skipped["tool output dropped"] += 1
    elif kind == "reasoning":
        session.skipped["reasoning"] += 1
    else:
        session.skipped[f"unknown item {kind if isinstance(kind, str) else '(no type)'}"] += 1
    session.seen(at)


def _meta(session: Session, meta: dict[str, Any]) -> None:
    if isinstance(meta.get("id"), str) and meta["id"].strip():
        session.session_id = meta["id"].strip()
    if isinstance(meta.get("cwd"), str) and meta["cwd"].strip():
        session.cwd = meta["cwd"].strip()
    source = meta.get("source")
    if meta.get("thread_source") == "subagent" or (isinstance(source, dict) and "subagent" in source):
        session.is_sidechain = True
    session.seen(parse_time(meta.get("timestamp")))


def _new_session(text: str, source_name: str) -> Session:
    # Without a meta record the id comes from the file name (rollout-<time>-<uuid>), else from the content, so the
    # same file read twice is the same session.
    match = _UUID.search(PurePosixPath(source_name).name)
    fallback = match.group(0) if match else "codex-" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return Session(
        session_id=fallback,
        client="codex",
        cwd=None,
        is_sidechain=False,
        started_at=None,
        ended_at=None,
        source_name=source_name,
    )


def _legacy_json(text: str) -> dict[str, Any] | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        whole = json.loads(text)
    except ValueError:
        return None
    return whole if isinstance(whole, dict) and isinstance(whole.get("items"), list) else None


def parse_codex(text: str, *, source_name: str = "") -> list[Session]:
    """The session in one Codex rollout file (any of its layouts). Never raises on content: unknown records and
    items, broken lines and Codex's own context messages are counted in `skipped`."""
    session = _new_session(text, source_name)
    legacy = _legacy_json(text)
    if legacy is not None:
        if isinstance(legacy.get("session"), dict):
            _meta(session, legacy["session"])
        for item in legacy["items"]:
            if isinstance(item, dict):
                _item(session, item, parse_time(item.get("timestamp")))
            else:
                session.skipped["broken item"] += 1
        return [session]
    seen_meta = False
    skipped: Counter[str] = Counter()
    for record in records(text, skipped):
        kind, payload, at = record.get("type"), record.get("payload"), parse_time(record.get("timestamp"))
        if kind in _ENVELOPES and isinstance(payload, dict):
            if kind == "session_meta":
                _meta(session, payload)
                seen_meta = True
            elif kind == "response_item":
                _item(session, payload, at)
            elif kind == "turn_context":
                if session.cwd is None and isinstance(payload.get("cwd"), str) and payload["cwd"].strip():
                    session.cwd = payload["cwd"].strip()
                session.skipped["turn_context record"] += 1
            else:
                session.skipped[f"{kind} record"] += 1
        elif kind is None and not seen_meta and "id" in record and "record_type" not in record:
            _meta(session, record)  # the older layout's first line: the bare session meta
            seen_meta = True
        elif record.get("record_type") == "state":
            session.skipped["state record"] += 1
        elif isinstance(kind, str) and kind not in _ENVELOPES and "payload" not in record:
            _item(session, record, at)  # the older layout: bare items
        else:
            session.skipped[f"unknown record {kind if isinstance(kind, str) else '(no type)'}"] += 1
    session.skipped.update(skipped)
    return [session]
