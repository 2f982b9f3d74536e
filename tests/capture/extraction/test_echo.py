"""Anti-echo: Atrium's recall inside a captured turn becomes a placeholder naming the tool, before any extraction."""

from __future__ import annotations

import json

import api.mcp.tools  # noqa: F401  (registers every tool in TOOLS)
from api.mcp.registry import TOOLS
from capture.extraction import RECALL_TOOLS, extract_turn, rule_facts, scrub_echo
from memory.text import wrap_memory_context, wrap_memory_field

RECALLED = "The staging database runs on port 5433."


def test_recall_tools_are_exactly_the_registrys_read_tools() -> None:
    read_tools = {name for name, spec in TOOLS.items() if not spec.write}
    assert read_tools and "memory_search" in read_tools and "memory_save" not in read_tools
    # memory_episode_timeline is issue 25's new read tool (branch capture-core); listed here ahead of its merge, so
    # the comparison holds before and after it.
    assert set(RECALL_TOOLS) == read_tools | {"memory_episode_timeline"}
    assert len(RECALL_TOOLS) == len(set(RECALL_TOOLS))


def test_a_recall_block_in_a_turn_becomes_a_placeholder_naming_the_tool() -> None:
    # As an agent's turn reads when it pastes what Atrium's search returned (the server's real wrapper).
    text = (
        "Let me check what we know first.\n"
        'Called mcp__atrium__memory_search with {"query": "staging database port"}\n'
        f"{wrap_memory_context('1. ' + RECALLED + ' (fact, id=41)')}\n"
        "Actually, the staging database moved to port 5434 last week."
    )
    scrubbed = scrub_echo(text)
    assert scrubbed.removed == ["memory_search"]
    assert "[atrium memory_search output omitted]" in scrubbed.text
    assert "5433" not in scrubbed.text and "Recalled memory" not in scrubbed.text
    assert "Let me check what we know first." in scrubbed.text and "port 5434 last week" in scrubbed.text
    # The recalled fact is not extracted again; the new statement is.
    assert [c.content for c in rule_facts(scrubbed.text, limit=5)] == [
        "The staging database moved to port 5434 last week."
    ]


def test_a_block_without_a_tool_name_and_inline_fields_and_an_unclosed_block() -> None:
    profile = "Session start profile:\n" + wrap_memory_context("- I prefer tabs over spaces.")
    inline = json.dumps({"hits": [{"content": wrap_memory_field(RECALLED)}]})
    unclosed = "Here it is: <atrium_memory_context>\n- I prefer tabs over spaces.\n- Remember that X is Y."
    assert scrub_echo(profile).removed == ["memory_context"]
    assert scrub_echo(profile).text == "Session start profile:\n[atrium memory_context output omitted]"
    assert scrub_echo(inline).removed == ["memory_context"] and RECALLED not in scrub_echo(inline).text
    assert scrub_echo(unclosed).text == "Here it is: [atrium memory_context output omitted]"
    assert rule_facts(scrub_echo(profile).text, limit=5) == []
    # Positive control: the same sentence outside a recall block is extracted.
    assert rule_facts("I prefer tabs over spaces.", limit=5)[0].pattern == "prefer"


def test_claude_code_tool_result_of_a_recall_tool_is_replaced_and_others_are_kept() -> None:
    content = [
        {"type": "text", "text": "Checking memory and the repo."},
        {"type": "tool_use", "id": "toolu_01A", "name": "mcp__atrium__memory_profile", "input": {}},
        {"type": "tool_use", "id": "toolu_01B", "name": "Bash", "input": {"command": "git log -1"}},
        {"type": "tool_result", "tool_use_id": "toolu_01A", "content": [{"type": "text", "text": RECALLED}]},
        {"type": "tool_result", "tool_use_id": "toolu_01B", "content": "commit 1a2b3c fix login"},
    ]
    scrubbed = scrub_echo(json.dumps(content))
    assert scrubbed.removed == ["memory_profile"]
    back = json.loads(scrubbed.text)
    assert back[3]["content"] == "[atrium memory_profile output omitted]"
    assert back[4]["content"] == "commit 1a2b3c fix login"  # not a recall tool: kept (the control)
    assert RECALLED not in scrubbed.text


def test_codex_function_call_output_of_a_recall_tool_is_replaced() -> None:
    items = [
        {"type": "function_call", "name": "atrium.memory_search", "call_id": "call_7", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_7", "output": RECALLED},
        {"type": "function_call", "name": "shell", "call_id": "call_8", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_8", "output": "ok"},
    ]
    scrubbed = scrub_echo(json.dumps(items))
    assert scrubbed.removed == ["memory_search"]
    assert [item.get("output") for item in json.loads(scrubbed.text)] == [
        None,
        "[atrium memory_search output omitted]",
        None,
        "ok",
    ]


def test_text_without_an_echo_is_unchanged_and_other_protocol_tags_keep_their_text() -> None:
    plain = 'Remember that the "memory_search" tool is slow on cold starts.'
    assert scrub_echo(plain).text == plain and scrub_echo(plain).removed == []
    request = "<current_user_request>Always squash merge feature branches.</current_user_request>"
    assert scrub_echo(request).text == "Always squash merge feature branches." and scrub_echo(request).removed == []


def test_extract_turn_scrubs_first_and_reports_the_echoes() -> None:
    text = f"mcp__atrium__memory_search\n{wrap_memory_context('- We decided to use Redis Streams.')}\nThanks!"
    result = extract_turn(text=text, role="user", mode="eager")
    assert result.echoes == ["memory_search"] and result.facts == []
    assert "Redis" not in result.episode and "[atrium memory_search output omitted]" in result.episode
    control = extract_turn(text="We decided to use Redis Streams.", role="user", mode="eager")
    assert [f.pattern for f in control.facts] == ["decided"]
