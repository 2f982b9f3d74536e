"""Issue 26, agent-facing messages, through the official MCP client: argument errors are one line per problem
naming the argument and what to send (never pydantic's dump), unknown arguments are refused by name, every argument
is snake_case in tools/list with its camelCase spelling accepted, and a conflict says which tool reloads the state
it raced with."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic.alias_generators import to_camel

from api.mcp.registry import TOOLS
from api.mcp.server import mcp  # noqa: F401  (importing the server registers every tool in TOOLS)
from memory.models import HandoffVersion, Memory, ProfileVersion
from tests.api.mcp.conftest import call_each, mcp_client, run, text_of

LINE = re.compile(
    r"argument [a-z_\[\]0-9.]+: .+; send .+"
    r"|unknown argument [A-Za-z_\[\]0-9.]+(: did you mean [a-z_]+\?|; the arguments here are [a-z_, ]+)"
)
SNAKE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")


def _problems(result: Any) -> list[str]:
    """The lines of an argument error after its first (which names the tool), each checked against the format."""
    assert result.is_error, text_of(result)
    text = text_of(result)
    assert "pydantic" not in text and "Arguments" not in text and "[type=" not in text, text
    first, *lines = text.splitlines()
    assert first.startswith("Error executing tool ") and lines, text
    for line in lines:
        assert LINE.fullmatch(line), line
    return lines


def test_bad_arguments_get_one_line_per_problem_naming_the_argument_and_what_to_send(tokens: dict[str, str]) -> None:
    ok, bad_save, word_id, missing_id, unknown, unknown_far, nested = run(
        call_each(
            tokens["alice"],
            [
                ("memory_save", {"content": "The staging cluster runs Redis 7.", "kind": "fact"}),
                ("memory_save", {"content": "", "kind": "fakt", "importance": 2}),
                ("memory_restore", {"id": "seven"}),
                ("memory_restore", {}),
                ("memory_search", {"query": "redis", "asof": "2024-01-01T00:00:00Z"}),
                ("memory_timeline", {"asOf": "2024-01-01T00:00:00Z"}),
                (
                    "memory_save",
                    {"items": [{"content": "Deploy on Fridays.", "kind": "decision", "occuredAt": "2024-01-01"}]},
                ),
            ],
        )
    )
    assert not ok.is_error  # positive control: the same tool takes good arguments
    assert Memory.objects.count() == 1  # and the refused calls stored nothing
    assert _problems(bad_save) == [
        "argument content: is empty; send a text of 1–20000 characters",
        "argument kind: got 'fakt'; send one of fact, preference, decision, episode, skill",
        "argument importance: is 2, more than 1.0; send a number from 0 to 1",
    ]
    assert _problems(word_id) == ["argument id: got 'seven'; send an integer of at least 1"]
    assert _problems(missing_id) == ["argument id: missing; send an integer of at least 1"]
    assert _problems(unknown) == ["unknown argument asof: did you mean as_of?"]
    assert _problems(unknown_far) == [
        "unknown argument asOf; the arguments here are order, kind, project, limit, cursor, offset"
    ]
    assert _problems(nested) == ["unknown argument items[0].occuredAt: did you mean occurred_at?"]


async def _listed(token: str) -> dict[str, dict[str, Any]]:
    async with mcp_client(token) as client:
        return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}


@pytest.mark.parametrize("tool", sorted(TOOLS))  # every tool the server registers (mcp imports them)
def test_every_argument_is_snake_case_and_its_camel_case_spelling_is_accepted(
    tokens: dict[str, str], tool: str
) -> None:
    schema = run(_listed(tokens["alice"]))[tool]
    objects = [schema, *schema.get("$defs", {}).values()]
    names = [name for node in objects for name in node.get("properties", {})]
    for name in names:
        assert SNAKE.fullmatch(name), f"{tool}: {name}"
    assert schema.get("additionalProperties") is False  # unknown arguments are refused, and the schema says so
    multi_word = [name for name in schema.get("properties", {}) if "_" in name]
    # A value no argument takes (an object), sent under each spelling: the error must name the snake_case argument
    # both times. Were the camelCase spelling not accepted, it would come back as an unknown argument.
    calls = [(tool, {spelling: {"not": "this"}}) for name in multi_word for spelling in (name, to_camel(name))]
    results = run(call_each(tokens["alice"], calls)) if calls else []
    for (_, args), result in zip(calls, results, strict=True):
        (spelling,) = args
        name = next(n for n in multi_word if spelling in (n, to_camel(n)))
        assert any(line.startswith(f"argument {name}: got an object; send ") for line in _problems(result)), (
            spelling,
            text_of(result),
        )


def test_camel_case_arguments_reach_the_tool(tokens: dict[str, str]) -> None:
    """The camelCase spelling is not only accepted but used: the same call in both spellings stores the same."""
    when = "2024-03-02T14:05:00+00:00"
    run(
        call_each(
            tokens["alice"],
            [
                ("memory_save", {"items": [{"content": "Shipped the parser.", "kind": "episode", "occurredAt": when}]}),
                ("memory_save", {"items": [{"content": "Merged the lexer.", "kind": "episode", "occurred_at": when}]}),
                ("memory_save", {"content": "Reviewed the tokenizer.", "kind": "episode", "occurredAt": when}),
            ],
        )
    )
    stored = {m.content: m.occurred_at for m in Memory.objects.all()}
    expected = datetime(2024, 3, 2, 14, 5, tzinfo=UTC)
    assert stored == {
        "Shipped the parser.": expected,
        "Merged the lexer.": expected,
        "Reviewed the tokenizer.": expected,
    }


def test_a_conflict_names_the_tool_that_reloads_its_state(tokens: dict[str, str]) -> None:
    saved, profile_ok, profile_stale, handoff_ok, handoff_stale = run(
        call_each(
            tokens["alice"],
            [
                ("memory_save", {"content": "The staging cluster runs Redis 7.", "kind": "fact"}),
                ("memory_profile_edit", {"action": "edit", "content": "Alice likes tea.", "expected_version": 0}),
                ("memory_profile_edit", {"action": "edit", "content": "Alice likes coffee.", "expected_version": 0}),
                ("memory_handoff_save", {"doing": "wiring the parser", "expected_version": 0}),
                ("memory_handoff_save", {"doing": "parser merged", "expected_version": 0}),
            ],
        )
    )
    memory_id = saved.structured_content["items"][0]["id"]
    (update_stale,) = run(
        call_each(
            tokens["alice"],
            [
                (
                    "memory_update",
                    {"id": memory_id, "content": "The staging cluster runs Redis 8.", "expected_version": 7},
                )
            ],
        )
    )
    # Positive controls: the first edit and the first handoff landed; the stale ones changed nothing.
    assert not profile_ok.is_error and not handoff_ok.is_error
    assert ProfileVersion.objects.count() == 1 and HandoffVersion.objects.count() == 1
    assert Memory.objects.get(pk=memory_id).content == "The staging cluster runs Redis 7."
    assert profile_stale.is_error and "Reload with memory_profile and retry" in text_of(profile_stale)
    assert handoff_stale.is_error and "Reload with memory_handoff_load and retry" in text_of(handoff_stale)
    assert update_stale.is_error and "Reload with memory_examine and retry" in text_of(update_stale)
    for result in (profile_stale, handoff_stale):
        assert "memory_examine" not in text_of(result), text_of(result)
