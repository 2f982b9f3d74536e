"""Anti-echo: Atrium's own recall inside a captured turn is replaced by a placeholder before anything is extracted.

Memory must not reinforce itself: a turn that quotes what ``memory_search`` returned would otherwise be captured as
a new statement of the same facts, reinforce them, and come back stronger at the next search. An echo takes three
shapes in what clients send, and :func:`scrub_echo` replaces each by ``[atrium <tool> output omitted]``:

1. a ``<atrium_memory_context>…</atrium_memory_context>`` block: the wrapper every recall leaves the server in
   (memory/text/wrapping.py), as a whole text block or inline around one field of a structured result. The tool is
   named when the text just before the block names one of :data:`RECALL_TOOLS` (Claude Code's
   ``mcp__atrium__memory_search``, Codex's ``atrium.memory_search``, or the bare name), else ``memory_context``. A
   block left open runs to the end of the text;
2. a transcript's JSON (a Claude Code message content list or record, a Codex ``function_call`` /
   ``function_call_output`` pair): the result of a tool call whose name is a recall tool, matched by the call's
   ``id`` / ``call_id`` and the result's ``tool_use_id`` / ``call_id``; the JSON comes back re-serialised;
3. any other protocol tag the server uses (``<current_user_request>``, forged spellings) is removed, its text kept:
   it is the live request, not recall.

Only the server's exact wrapper spelling starts a block (case aside): that is what the server emits; a look-alike
spelling is a forgery and is stripped as a tag (3) like everywhere else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from memory.text import strip_protocol_tags

# Atrium's MCP tools that return stored memory: every read tool of api/mcp's registry (and memory_episode_timeline,
# which issue 25 adds). capture may not import api, so the names are kept here;
# tests/capture/extraction/test_echo.py compares them with the registry.
RECALL_TOOLS: tuple[str, ...] = (
    "memory_assess",
    "memory_audit_forgotten",
    "memory_episode_timeline",
    "memory_examine",
    "memory_export",
    "memory_facts",
    "memory_handoff_load",
    "memory_history",
    "memory_neighbors",
    "memory_profile",
    "memory_review",
    "memory_review_queue",
    "memory_search",
    "memory_stats",
    "memory_timeline",
    "memory_tour",
)
CONTEXT = "memory_context"  # the placeholder's name for a wrapper block no tool name precedes

_BLOCK = re.compile(r"<atrium_memory_context>(.*?)(?:</atrium_memory_context>|\Z)", re.IGNORECASE | re.DOTALL)
# A recall tool's name as clients write it: mcp__<server>__memory_x (Claude Code), <server>.memory_x or
# <server>__memory_x (Codex), or bare. Any server name: a client may have registered Atrium under another one.
_TOOL_NAME = re.compile(r"(?<![A-Za-z0-9_])(?:[A-Za-z0-9_-]+(?:__|\.))?(memory_[a-z_]+)(?![A-Za-z0-9_])")
_LOOKBACK = 400  # how far before a block a tool name still names it (a tool_use line, a JSON header)
_RESULT_KEYS = ("content", "output", "result", "text")


@dataclass(frozen=True)
class Scrubbed:
    """The turn with every echo replaced by a placeholder, and the names of what was removed (one entry per echo)."""

    text: str
    removed: list[str] = field(default_factory=list)


def placeholder(tool: str) -> str:
    return f"[atrium {tool} output omitted]"


def recall_tool(name: str) -> str | None:
    """The recall tool a client's tool name refers to (``mcp__atrium__memory_search`` → ``memory_search``), or None."""
    match = _TOOL_NAME.fullmatch(name.strip())
    return match.group(1) if match and match.group(1) in RECALL_TOOLS else None


def scrub_echo(text: str) -> Scrubbed:
    """``text`` with Atrium's recall output replaced by placeholders naming the tool (module docstring), and the
    removed tools' names in order. Text without an echo comes back unchanged (except a stray protocol tag)."""
    removed: list[str] = []
    parsed = _as_json(text)
    if parsed is not None:
        scrubbed_value = _scrub_json(parsed, removed)
        if removed:
            text = json.dumps(scrubbed_value, ensure_ascii=False)
    text = _BLOCK.sub(lambda m: _replace_block(m, removed), text)
    return Scrubbed(text=strip_protocol_tags(text), removed=removed)


def _replace_block(match: re.Match[str], removed: list[str]) -> str:
    before = match.string[max(0, match.start() - _LOOKBACK) : match.start()]
    names = [m.group(1) for m in _TOOL_NAME.finditer(before) if m.group(1) in RECALL_TOOLS]
    tool = names[-1] if names else CONTEXT
    removed.append(tool)
    return placeholder(tool)


def _as_json(text: str) -> Any:
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def _scrub_json(value: Any, removed: list[str]) -> Any:
    """A copy of a transcript's JSON with every recall tool's result replaced by its placeholder."""
    calls: dict[str, str] = {}
    _collect_calls(value, calls)
    return _replace_results(value, calls, removed) if calls else value


def _collect_calls(value: Any, calls: dict[str, str]) -> None:
    # A tool call: {"type": "tool_use", "id": …, "name": …} (Claude Code) or {"type": "function_call", "call_id": …,
    # "name": …} (Codex, OpenAI responses).
    if isinstance(value, dict):
        name = value.get("name")
        call_id = value.get("id") or value.get("call_id")
        if isinstance(name, str) and isinstance(call_id, str) and (tool := recall_tool(name)):
            calls[call_id] = tool
        for item in value.values():
            _collect_calls(item, calls)
    elif isinstance(value, list):
        for item in value:
            _collect_calls(item, calls)


def _replace_results(value: Any, calls: dict[str, str], removed: list[str]) -> Any:
    if isinstance(value, list):
        return [_replace_results(item, calls, removed) for item in value]
    if not isinstance(value, dict):
        return value
    ref = value.get("tool_use_id") or (value.get("call_id") if "name" not in value else None)
    tool = calls.get(ref) if isinstance(ref, str) else None
    if tool is not None and any(key in value for key in _RESULT_KEYS):
        removed.append(tool)
        return {key: placeholder(tool) if key in _RESULT_KEYS else item for key, item in value.items()}
    return {key: _replace_results(item, calls, removed) for key, item in value.items()}


# What a client writes into a transcript as if the user had said it: Claude Code's command echoes and its
# interruption notice. The importers skip them while parsing (capture/importers/claude_code.py); a live capture (the
# hook, any client POSTing turns) may send them, so a turn that is only such a notice keeps nothing either.
GENERATED_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "Caveat: The messages below were generated by the user while running local commands",
)
INTERRUPTED = "[Request interrupted by user"


def client_notice(text: str) -> str:
    """Why a turn's text is a client's notice rather than something said ("" when it is not one)."""
    stripped = text.lstrip()
    if stripped.startswith(GENERATED_PREFIXES):
        return "a command message the client wrote, not something said"
    if stripped.startswith(INTERRUPTED):
        return "an interruption notice the client wrote, not something said"
    return ""
