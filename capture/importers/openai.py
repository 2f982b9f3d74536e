"""OpenAI-style chat transcripts: `{"messages": [{role, content}, ...]}` (optionally with `session_id`/`id` and
`cwd`), a bare list of messages, or a list of such objects. `content` is a string or a list of text parts; assistant
`tool_calls` (and the older `function_call`) become tool turns; `tool`/`function` messages are tool output, dropped."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from capture.importers.transcript import Session, TranscriptError, parse_time, text_of

_ID_KEYS = ("session_id", "session", "id", "conversation_id", "thread_id")
_TIME_KEYS = ("timestamp", "created_at", "at", "time")


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> object:
    return next((obj[key] for key in keys if obj.get(key) not in (None, "")), None)


def _tool_turns(session: Session, message: dict[str, Any], at: datetime | None) -> None:
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        session.add("tool", "", tool=name if isinstance(name, str) and name else "unknown", at=at)
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        name = legacy.get("name")
        session.add("tool", "", tool=name if isinstance(name, str) and name else "unknown", at=at)


def _conversation(obj: dict[str, Any], messages: list[Any], source_name: str) -> Session:
    given = _first(obj, _ID_KEYS)
    # No id in the file: one from the content, so the same conversation uploaded twice is one session.
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()[:16]
    cwd = obj.get("cwd")
    session = Session(
        session_id=str(given) if isinstance(given, str | int) else f"openai-{digest}",
        client="openai",
        cwd=cwd.strip() if isinstance(cwd, str) and cwd.strip() else None,
        is_sidechain=False,
        started_at=None,
        ended_at=None,
        source_name=source_name,
    )
    session.seen(parse_time(_first(obj, _TIME_KEYS)))
    title = obj.get("title")
    session.title = title.strip() if isinstance(title, str) and title.strip() else None
    for message in messages:
        if not isinstance(message, dict):
            session.skipped["broken message"] += 1
            continue
        role, at = message.get("role"), parse_time(_first(message, _TIME_KEYS))
        text = text_of(message.get("content"))
        if role in ("user", "assistant") and text:
            session.add(role, text, at=at)
        elif role in ("tool", "function"):
            session.skipped["tool output dropped"] += 1
        elif role in ("system", "developer"):
            session.skipped[f"{role} message"] += 1
        elif role == "user":
            session.skipped["empty message"] += 1
        elif role != "assistant":
            session.skipped[f"unknown role {role if isinstance(role, str) else '(none)'}"] += 1
        if role == "assistant":
            _tool_turns(session, message, at)
        session.seen(at)
    return session


def parse_openai_messages(text: str, *, source_name: str = "") -> list[Session]:
    """The sessions in an OpenAI-style messages JSON. Raises TranscriptError when the text is not JSON or holds no
    messages; bad messages inside are counted in `skipped`."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise TranscriptError(f"{source_name or 'the file'} is not valid JSON ({error})") from None
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return [_conversation(data, data["messages"], source_name)]
    if (
        isinstance(data, list)
        and data
        and all(isinstance(d, dict) and isinstance(d.get("messages"), list) for d in data)
    ):
        return [_conversation(d, d["messages"], source_name) for d in data]
    if isinstance(data, list) and any(isinstance(d, dict) and "role" in d for d in data):
        return [_conversation({}, data, source_name)]
    raise TranscriptError(
        f'{source_name or "the file"} holds no messages: send {{"messages": [{{"role": ..., "content": ...}}]}}'
        " or a list of messages"
    )
