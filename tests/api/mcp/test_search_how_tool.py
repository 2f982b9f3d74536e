"""memory_search through the official MCP client says how it was made: a `How:` line (arms, floor, rewrite,
fallback) and the same fields in structured output; on a miss with the overview fallback, an overview section
labelled as one and without refs. A bad `fallback` is a tool error naming it and the values allowed; without one,
the user's setting applies, and an explicit one wins."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.usersettings import user_settings_update
from api.mcp import schemas
from api.mcp.text.recall import how_line
from memory.models import Memory, SearchBatch
from palace.actors import Actor
from palace.models import Palace
from tests.api.mcp.conftest import MODES, call_sync, mcp_client, run, text_of
from tests.conftest import PROJECT_ORIGIN
from tests.fakes.team_notes import HIT, HIT_ANSWER, MISS, save_team_notes


@pytest.fixture
def notes(tokens: dict[str, str], alice: Any) -> list[Memory]:
    return save_team_notes(Palace.objects.get(personal_owner=alice))


def _how_line(text: str) -> str:
    (line,) = [line for line in text.splitlines() if line.startswith("How: ")]
    return line


@pytest.mark.parametrize("mode", MODES)
def test_a_hit_states_the_arms_the_floor_and_no_fallback(tokens: dict[str, str], notes: Any, mode: str) -> None:
    result = call_sync(tokens["alice"], "memory_search", {"query": HIT}, mode=mode)

    assert not result.is_error, text_of(result)
    out = result.structured_content
    assert out["hits"][0]["content"] == HIT_ANSWER
    how = out["how"]
    assert how["arms"] == ["lexical", "semantic"] and how["matched"] is True
    assert 0.7 < how["floor"] < 0.95 and isinstance(how["belowFloor"], int)
    assert (how["rewrite"], how["queries"]) == ("off", [HIT])
    assert (how["fallback"], how["fallbackFrom"], how["fallbackUsed"]) == ("none", "setting", False)
    assert out["overview"] is None
    line = _how_line(text_of(result))
    assert line.startswith(f"How: arms lexical + semantic · floor {how['floor']:.3f} ({how['belowFloor']} below it)")
    assert line.endswith("· rewrite off · fallback none (your setting)")
    assert "Overview" not in text_of(result)


def test_a_dialogue_query_says_how_it_was_read(tokens: dict[str, str], notes: Any) -> None:
    dialogue = f"ana: hi there\nbot: hello, how can I help\nana: quick one\nbot: sure\nana: {HIT}"
    result = call_sync(tokens["alice"], "memory_search", {"query": dialogue})

    assert not result.is_error, text_of(result)
    out = result.structured_content
    assert out["hits"][0]["content"] == HIT_ANSWER
    assert out["how"]["queryRead"] == "dialogue of 5 turns: semantic arm the last 4, full text all"
    assert _how_line(text_of(result)).endswith(
        "· query read as a dialogue of 5 turns: semantic arm the last 4, full text all"
    )
    plain = call_sync(tokens["alice"], "memory_search", {"query": HIT})  # a question is read as given
    assert plain.structured_content["how"]["queryRead"] == "as given"
    assert "query read" not in _how_line(text_of(plain))
    assert plain.structured_content["how"]["database"] == "primary"  # no replica configured here
    assert "read from" not in _how_line(text_of(plain))
    replica = schemas.SearchHowOut.model_validate({**plain.structured_content["how"], "database": "replica_1"})
    assert how_line(replica).endswith("· read from replica_1 (a read replica: rows may lag by seconds)")


def test_a_miss_with_the_overview_fallback_is_labelled_and_has_no_refs(tokens: dict[str, str], notes: Any) -> None:
    result = call_sync(tokens["alice"], "memory_search", {"query": MISS, "fallback": "overview"})

    assert not result.is_error, text_of(result)
    out = result.structured_content
    assert out["hits"] == [] and out["batchId"] is None
    assert out["how"]["matched"] is False and out["how"]["belowFloor"] > 0
    assert (out["how"]["fallback"], out["how"]["fallbackFrom"], out["how"]["fallbackUsed"]) == (
        "overview",
        "request",
        True,
    )
    overview = out["overview"]
    assert overview["label"] == "overview" and {e["label"] for e in overview["entries"]} == {"overview"}
    assert all("ref" not in e for e in overview["entries"])
    assert {e["memory"]["id"] for e in overview["entries"]} <= {m.pk for m in notes}
    assert {(r["palace"], r["kind"]): r["memories"] for r in overview["rooms"]}[("my palace", "fact")] == 10
    text = text_of(result)
    assert _how_line(text).endswith("· fallback overview (your argument, used)")
    assert "No memory matched. Nothing here is evidence" in text
    assert "Overview (not an answer and not evidence" in text
    rows = [line for line in text.splitlines() if line.startswith("- id=")]
    assert len(rows) == len(overview["entries"]) and all("[overview · recent]" in row for row in rows)
    assert all("ref=" not in line for line in text.splitlines())  # nothing in it can be cited
    assert "rooms @my palace fact: 2 room(s), 10 memories (newest: Fact Hall-2, Fact Hall)" in text
    assert not SearchBatch.objects.exists()


def test_the_setting_is_the_default_and_an_explicit_fallback_wins(
    tokens: dict[str, str], alice: Any, notes: Any
) -> None:
    async def searches() -> list[Any]:
        async with mcp_client(tokens["alice"]) as client:
            return [
                await client.call_tool("memory_search", {"query": MISS}),
                await client.call_tool("memory_search", {"query": MISS, "fallback": "none"}),
            ]

    before, _ = run(searches())
    user_settings_update(user=alice, search_fallback="overview", actor=Actor.for_user(alice))
    by_setting, told_none = run(searches())

    assert before.structured_content["overview"] is None  # control: off until the user changes it
    assert by_setting.structured_content["overview"]["entries"]
    assert _how_line(text_of(by_setting)).endswith("fallback overview (your setting, used)")
    assert told_none.structured_content["overview"] is None
    assert _how_line(text_of(told_none)).endswith("fallback none (your argument)")
    assert "Overview" not in text_of(told_none)


def test_a_bad_fallback_is_a_tool_error_naming_the_argument_and_the_values(tokens: dict[str, str], notes: Any) -> None:
    bad = call_sync(tokens["alice"], "memory_search", {"query": MISS, "fallback": "everything"})
    good = call_sync(tokens["alice"], "memory_search", {"query": MISS, "fallback": "overview"})

    assert bad.is_error
    message = text_of(bad)
    assert "argument fallback: got 'everything'; send one of none, overview" in message
    assert "Traceback" not in message
    assert not good.is_error and good.structured_content["overview"]["entries"]  # positive control


def test_an_outsiders_overview_never_shows_another_palace(
    tokens: dict[str, str], alice: Any, charlie: Any, project: Palace
) -> None:
    shared = save_team_notes(project)
    wanted = {"query": MISS, "fallback": "overview"}

    owner = call_sync(tokens["alice"], "memory_search", {**wanted, "project": PROJECT_ORIGIN})
    named = call_sync(tokens["charlie"], "memory_search", {**wanted, "project": PROJECT_ORIGIN})
    everything = call_sync(tokens["charlie"], "memory_search", wanted)

    entries = owner.structured_content["overview"]["entries"]  # positive control: the owner sees the project's
    assert entries and {e["memory"]["id"] for e in entries} <= {m.pk for m in shared}
    assert named.is_error and "project not found" in text_of(named)
    assert everything.structured_content["overview"]["entries"] == []
    assert {r["palace"] for r in everything.structured_content["overview"]["rooms"]} <= {"my palace"}
    assert "atrium-test/demo" not in text_of(everything)


def test_without_the_embedder_the_how_line_says_only_the_lexical_arm_ran(
    tokens: dict[str, str], notes: Any, embedder_down: None
) -> None:
    result = call_sync(tokens["alice"], "memory_search", {"query": "green tea"})

    assert result.structured_content["how"]["arms"] == ["lexical"]
    assert _how_line(text_of(result)).startswith("How: arms lexical · floor none (no vector arm)")
