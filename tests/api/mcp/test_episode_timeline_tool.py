"""memory_episode_timeline through the official MCP client: sessions headed by their summaries (labelled), the
three modes, the outsider beside the owner, and errors that name the argument."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from capture.models import CaptureSession
from memory.models import Memory
from memory.text.wrapping import CLOSE_TAG, OPEN_TAG
from palace.models import Palace
from tests.api.mcp.conftest import call_each, run, text_of
from tests.conftest import PROJECT_ORIGIN
from tests.fakes.memories import T0, make_memory

TOOL = "memory_episode_timeline"


def episode(palace: Palace, text: str, *, session: str, minutes: int) -> Memory:
    made = make_memory(palace, text, kind="episode")
    Memory.objects.filter(pk=made.pk).update(source_session=session, occurred_at=T0 + timedelta(minutes=minutes))
    return made


@pytest.fixture
def seeded(tokens: dict[str, str], alice: Any, project: Palace) -> dict[str, Memory]:
    mine = Palace.objects.get(personal_owner=alice)
    made = {
        "k0": episode(mine, "Asked how to rotate the staging keys", session="s-keys", minutes=0),
        "k1": episode(mine, "Rotated them with the vault CLI", session="s-keys", minutes=4),
        "r0": episode(project, "Agreed to cut release branches on Mondays", session="s-rel", minutes=90),
    }
    CaptureSession.objects.create(
        user=alice, palace=mine, key="s-keys", summary="Rotated the staging keys with the vault.", summary_method="llm"
    )
    return made


def test_sessions_come_headed_and_labelled_and_the_outsider_sees_none(
    seeded: dict[str, Memory], tokens: dict[str, str]
) -> None:
    calls = [
        (TOOL, {}),
        (TOOL, {"around": seeded["k1"].pk, "window_minutes": 10}),
        (TOOL, {"project": PROJECT_ORIGIN, "session": "s-rel"}),
    ]
    whole, around, drill = run(call_each(tokens["alice"], calls))
    assert not whole.is_error, text_of(whole)
    groups = whole.structured_content["groups"]
    assert [g["session"] for g in groups] == ["s-rel", "s-keys"]
    keys = groups[1]
    assert (keys["summary"], keys["summaryMethod"], keys["summarySource"]) == (
        "Rotated the staging keys with the vault.",
        "llm",
        "capture",
    )
    assert [e["id"] for e in keys["episodes"]] == [seeded["k0"].pk, seeded["k1"].pk]
    assert (groups[0]["summaryMethod"], groups[0]["palace"]) == ("first_episode", "github.com/atrium-test/demo")
    text = text_of(whole)
    assert text.startswith(OPEN_TAG) and text.rstrip().endswith(CLOSE_TAG)  # recalled text leaves wrapped
    assert "Rotated the staging keys with the vault.  [summary by the model (capture)]" in text
    assert "[no session summary: its first episode shown]" in text
    assert not around.is_error and around.structured_content["mode"] == "around"
    assert around.structured_content["around"]["id"] == seeded["k1"].pk
    assert [e["id"] for g in around.structured_content["groups"] for e in g["episodes"]] == [
        seeded["k0"].pk,
        seeded["k1"].pk,
    ]
    assert f"± 10 min of id={seeded['k1'].pk}" in text_of(around)
    assert [g["session"] for g in drill.structured_content["groups"]] == ["s-rel"]

    outsider = run(call_each(tokens["charlie"], calls))
    assert not outsider[0].is_error and outsider[0].structured_content["groups"] == []
    assert "staging keys" not in text_of(outsider[0]) + str(outsider[0].structured_content)
    for result in outsider[1:]:
        assert result.is_error and "not found" in text_of(result).lower(), text_of(result)
        assert "staging keys" not in text_of(result) and "release branches" not in text_of(result)


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        ({"window_minutes": 30}, "window_minutes"),
        ({"window_minutes": 0, "around": 1}, "window_minutes"),
        ({"start": "last tuesday"}, "start"),
        ({"start": "2026-11-02", "end": "2026-11-01"}, "end"),
        ({"around": 1, "end": "2026-11-01"}, "around"),
        ({"session": "x" * 201}, "session"),
    ],
)
def test_bad_arguments_are_tool_errors_that_name_them(
    tokens: dict[str, str], args: dict[str, Any], argument: str
) -> None:
    result = run(call_each(tokens["alice"], [(TOOL, args)]))[0]
    assert result.is_error and argument in text_of(result), text_of(result)
