"""The three transcript parsers on the hand-written transcripts, and on the edges of their formats."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from capture.importers import (
    Session,
    TranscriptError,
    parse_claude_code,
    parse_codex,
    parse_openai_messages,
    parse_path,
)

TRANSCRIPTS = Path(__file__).resolve().parent.parent / "transcripts"
ALICE_EN = TRANSCRIPTS / "claude-code/-home-alice-src-demo/3f6c2a1e-5b7d-4c8e-9a0f-1d2e3c4b5a61.jsonl"
ALICE_ZH = TRANSCRIPTS / "claude-code/-home-alice-src-demo/8a2d4e6f-1c3b-4a5d-8e7f-0a1b2c3d4e52.jsonl"
BOB = TRANSCRIPTS / "claude-code/-home-bob-work-infra/c4e8a2b6-9d1f-4e3a-b5c7-2f4e6a8c0d13.jsonl"
BOB_AGENT = (
    TRANSCRIPTS / "claude-code/-home-bob-work-infra/c4e8a2b6-9d1f-4e3a-b5c7-2f4e6a8c0d13/subagents/agent-a7f3c91.jsonl"
)
CODEX = TRANSCRIPTS / "codex/2025/06/12/rollout-2025-06-12T08-30-00-0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
OPENAI = TRANSCRIPTS / "openai/helpdesk-chat.json"


def roles(session: Session) -> Counter[str]:
    return Counter(turn.role for turn in session.turns)


def test_claude_code_session_turns_tools_and_skips() -> None:
    main, side = parse_claude_code(ALICE_EN.read_text(), source_name="alice.jsonl")

    assert (main.session_id, main.client, main.cwd, main.is_sidechain) == (
        "3f6c2a1e-5b7d-4c8e-9a0f-1d2e3c4b5a61",
        "claude-code",
        "/home/alice/src/demo",
        False,
    )
    assert roles(main) == {"user": 4, "assistant": 5, "tool": 6}
    assert [turn.index for turn in main.turns] == list(range(15))
    assert [t.tool for t in main.turns if t.role == "tool"] == [
        "mcp__atrium__memory_search",
        "Read",
        "Edit",
        "Bash",
        "Task",
        "Bash",
    ]
    assert all(t.text == "" for t in main.turns if t.role == "tool")
    assert all(t.tool is None for t in main.turns if t.role != "tool")
    assert main.skipped == {
        "broken line": 1,
        "tool output dropped": 6,
        "thinking": 1,
        "meta message": 1,
        "interruption notice": 1,
        "summary record": 1,
        "file-history-snapshot record": 1,
        "system record": 1,
    }
    assert main.title == "Nightly import lock and test fixtures cleanup"
    assert main.source_name == "alice.jsonl"
    assert main.started_at == datetime(2025, 6, 11, 9, 0, 2, 118000, tzinfo=UTC)
    assert main.ended_at == datetime(2025, 6, 11, 9, 6, 41, 20000, tzinfo=UTC)
    assert main.turns[0].at == datetime(2025, 6, 11, 9, 0, 14, 502000, tzinfo=UTC)
    assert main.turns[13].text.startswith("Remember that the advisory lock id for the nightly import is 7341")
    # The inline subagent is its own session, flagged, with its own indexes.
    assert (side.session_id, side.is_sidechain, side.cwd) == (f"{main.session_id}/sidechain-1", True, main.cwd)
    assert [(t.index, t.role, t.tool) for t in side.turns] == [
        (0, "user", None),
        (1, "tool", "Read"),
        (2, "assistant", None),
    ]


def test_tool_output_is_never_kept() -> None:
    """The memory_search result (with its recall block), file contents and test output appear in no turn."""
    sessions = parse_claude_code(ALICE_EN.read_text())
    texts = "\n".join(turn.text for session in sessions for turn in session.turns)

    assert "advisory lock" in texts  # the user's own words are kept
    for output in ("2 memories (hybrid search", "atrium_memory_context", "import redis", "4 passed in 2.02s"):
        assert output not in texts


def test_one_assistant_message_over_several_records_is_one_turn() -> None:
    main, _ = parse_claude_code(ALICE_EN.read_text())
    # thinking, text and tool_use of msg_01QmA1 came in three records: one text turn, then the tool turn
    assert main.turns[1].role == "assistant"
    assert main.turns[1].text == "Let me check what we already know about this import before reading the code."
    assert main.turns[2].tool == "mcp__atrium__memory_search"

    lines = [
        json.loads(line)
        for line in ALICE_EN.read_text().splitlines()
        if line.startswith('{"parentUuid"') and line.endswith("}")
    ]
    first = next(rec for rec in lines if rec["type"] == "assistant" and rec["message"]["content"][0]["type"] == "text")
    second = json.loads(json.dumps(first))
    second["message"]["content"] = [{"type": "text", "text": "And a second block."}]
    merged, *_ = parse_claude_code("\n".join(json.dumps(r) for r in (lines[1], first, second)))
    assert [(t.role, t.text) for t in merged.turns][-1] == (
        "assistant",
        "Let me check what we already know about this import before reading the code.\n\nAnd a second block.",
    )
    assert len(merged.turns) == 2


def test_indexes_are_stable_when_the_transcript_grows() -> None:
    """Capture keys on (session, turn): the file read part way gives the same turns the same indexes."""
    lines = ALICE_EN.read_text().splitlines()
    full = parse_claude_code("\n".join(lines))[0].turns
    for cut in (5, 12, 20, 28):
        part = parse_claude_code("\n".join(lines[:cut]))[0].turns
        assert 0 < len(part) < len(full)
        assert [(t.index, t.role, t.tool) for t in part] == [(t.index, t.role, t.tool) for t in full[: len(part)]]


def test_chinese_session_keeps_the_users_words_and_counts_command_echoes() -> None:
    (session,) = parse_claude_code(ALICE_ZH.read_text())

    assert roles(session) == {"user": 4, "assistant": 5, "tool": 4}
    assert session.skipped == {"command message": 2, "tool output dropped": 4}
    users = [t.text for t in session.turns if t.role == "user"]
    assert users[1] == "不对，我们之前决定的是最多重试 5 次，指数退避，不要引入 tenacity，自己写一个小循环就行。"
    assert "以后提交信息都用英文写" in users[2]
    # A block the user pasted is the user's text: the extractor's scrubber, not the parser, deals with it.
    assert users[0].startswith("<atrium_memory_context>")
    assert session.turns[8].tool == "mcp__atrium__memory_save"


def test_subagent_file_is_a_sidechain_session_of_its_parent() -> None:
    (parent,) = parse_claude_code(BOB.read_text())
    (agent,) = parse_claude_code(BOB_AGENT.read_text())

    assert (parent.session_id, parent.is_sidechain) == ("c4e8a2b6-9d1f-4e3a-b5c7-2f4e6a8c0d13", False)
    assert roles(parent) == {"user": 3, "assistant": 3, "tool": 2}
    assert parent.skipped == {"tool output dropped": 2, "queue-operation record": 1}
    assert (agent.session_id, agent.is_sidechain) == ("c4e8a2b6-9d1f-4e3a-b5c7-2f4e6a8c0d13/a7f3c91", True)
    assert roles(agent) == {"user": 1, "assistant": 1, "tool": 2}


def test_claude_code_never_raises_on_content() -> None:
    text = "\n".join(
        [
            "not json at all",
            "[1, 2]",
            json.dumps({"type": "user", "sessionId": "s1", "cwd": "/w", "message": "not a dict"}),
            json.dumps({"type": "assistant", "sessionId": "s1", "message": {"content": [42, {"type": "mystery"}]}}),
            json.dumps({"type": "user", "sessionId": "s1", "timestamp": "yesterday", "message": {"content": "hello"}}),
            json.dumps({"sessionId": "s1", "what": "no type"}),
            json.dumps({"type": "brand-new-kind", "sessionId": "s1"}),
        ]
    )
    (session,) = parse_claude_code(text, source_name="odd.jsonl")

    assert [(t.role, t.text, t.at) for t in session.turns] == [("user", "hello", None)]
    assert session.skipped == {
        "broken line": 2,
        "user record without a message": 1,
        "assistant block unreadable": 1,
        "assistant block mystery": 1,
        "record without a type": 1,
        "brand-new-kind record": 1,
    }
    assert parse_claude_code("") == []


def test_codex_rollout() -> None:
    (session,) = parse_codex(CODEX.read_text(), source_name=CODEX.name)

    assert (session.session_id, session.client, session.cwd, session.is_sidechain) == (
        "0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        "codex",
        "/home/carol/src/billing",
        False,
    )
    assert [(t.role, t.tool) for t in session.turns] == [
        ("user", None),
        ("tool", "shell"),
        ("assistant", None),
        ("tool", "apply_patch"),
        ("user", None),
        ("assistant", None),
    ]
    assert session.skipped == {
        "context message": 1,
        "event_msg record": 3,
        "turn_context record": 1,
        "reasoning": 1,
        "tool output dropped": 2,
        "unknown record future_record_kind": 1,
    }
    assert "environment_context" not in "".join(t.text for t in session.turns)
    assert session.started_at == datetime(2025, 6, 12, 8, 30, tzinfo=UTC)


def test_codex_older_layouts_and_subagents() -> None:
    bare = "\n".join(
        json.dumps(r)
        for r in (
            {"id": "old-1", "timestamp": "2025-04-01T10:00:00Z", "instructions": None, "git": None},
            {"record_type": "state"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Use tabs, never spaces."}]},
            {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Tabs it is."}]},
        )
    )
    (old,) = parse_codex(bare)
    assert (old.session_id, old.started_at) == ("old-1", datetime(2025, 4, 1, 10, tzinfo=UTC))
    assert [(t.role, t.text, t.tool) for t in old.turns] == [
        ("user", "Use tabs, never spaces.", None),
        ("tool", "", "shell"),
        ("assistant", "Tabs it is.", None),
    ]
    assert old.skipped == {"state record": 1, "tool output dropped": 1}

    legacy = {
        "session": {"id": "older-2", "timestamp": "2025-03-01T10:00:00Z"},
        "items": json.loads(f"[{bare.splitlines()[2]}, 7]"),
    }
    (older,) = parse_codex(json.dumps(legacy))
    assert (older.session_id, [t.text for t in older.turns], older.skipped) == (
        "older-2",
        ["Use tabs, never spaces."],
        {"broken item": 1},
    )

    meta = {
        "id": "child-3",
        "cwd": "/w",
        "source": {"subagent": {"thread_spawn": {"parent_thread_id": "p", "depth": 1}}},
    }
    (child,) = parse_codex(json.dumps({"timestamp": "2025-06-01T00:00:00Z", "type": "session_meta", "payload": meta}))
    assert (child.session_id, child.is_sidechain) == ("child-3", True)


def test_codex_without_meta_takes_its_id_from_the_file_name() -> None:
    line = json.dumps({"timestamp": "2025-06-01T00:00:00Z", "type": "response_item", "payload": {"type": "reasoning"}})
    (named,) = parse_codex(line, source_name="rollout-2025-06-01T00-00-00-0197aaaa-bbbb-7ccc-8ddd-eeeeffff0000.jsonl")
    (unnamed,) = parse_codex(line, source_name="x.jsonl")
    (again,) = parse_codex(line, source_name="y.jsonl")

    assert named.session_id == "0197aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
    assert unnamed.session_id.startswith("codex-") and unnamed.session_id == again.session_id


def test_openai_messages() -> None:
    (session,) = parse_openai_messages(OPENAI.read_text(), source_name="helpdesk-chat.json")

    assert (session.session_id, session.client, session.cwd, session.is_sidechain) == (
        "support-bot-2025-06-10-0007",
        "openai",
        None,
        False,
    )
    assert [(t.role, t.tool) for t in session.turns] == [
        ("user", None),
        ("tool", "memory_search"),
        ("assistant", None),
        ("user", None),
        ("assistant", None),
        ("user", None),
        ("assistant", None),
    ]
    assert session.skipped == {"system message": 1, "tool output dropped": 1}
    assert session.turns[3].text.endswith("remember that my laptop is the Linux one, not the Mac.")
    assert "atrium_memory_context" not in "".join(t.text for t in session.turns)
    assert session.started_at == datetime(2025, 6, 10, 16, 45, tzinfo=UTC)


def test_openai_bare_lists_and_conversation_lists() -> None:
    messages = [{"role": "user", "content": "I prefer dark mode."}, {"role": "assistant", "content": "Noted."}, "junk"]
    (bare,) = parse_openai_messages(json.dumps(messages))
    (same,) = parse_openai_messages(json.dumps(messages), source_name="renamed.json")
    assert [(t.role, t.text) for t in bare.turns] == [("user", "I prefer dark mode."), ("assistant", "Noted.")]
    assert bare.skipped == {"broken message": 1}
    assert bare.session_id.startswith("openai-") and bare.session_id == same.session_id  # same content, same session

    many = [{"id": "a", "cwd": "/src/a", "messages": messages[:1]}, {"id": "b", "messages": [{"role": "wizard"}]}]
    first, second = parse_openai_messages(json.dumps(many))
    assert (first.session_id, first.cwd, len(first.turns)) == ("a", "/src/a", 1)
    assert (second.session_id, second.turns, second.skipped) == ("b", [], {"unknown role wizard": 1})


@pytest.mark.parametrize("text", ["{not json", '{"hello": 1}', "[]", "42"])
def test_openai_rejects_what_holds_no_messages(text: str) -> None:
    with pytest.raises(TranscriptError, match=r"not valid JSON|holds no messages"):
        parse_openai_messages(text, source_name="x.json")


def test_parse_path_detects_each_format_from_content(tmp_path: Path) -> None:
    # Names say nothing: detection reads the content.
    for source, name in ((ALICE_ZH, "a.jsonl"), (CODEX, "b.jsonl"), (OPENAI, "c.json")):
        (tmp_path / name).write_bytes(source.read_bytes())
    clients = [s.client for name in ("a.jsonl", "b.jsonl", "c.json") for s in parse_path(tmp_path / name)]
    assert clients == ["claude-code", "codex", "openai"]

    (tmp_path / "notes.jsonl").write_text('{"hello": "world"}\n')
    with pytest.raises(TranscriptError, match="notes.jsonl: not a transcript we can read"):
        parse_path(tmp_path / "notes.jsonl")
    with pytest.raises(TranscriptError, match="cannot be read"):
        parse_path(tmp_path / "missing.jsonl")
