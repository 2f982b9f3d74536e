"""Issue 26, agent-facing messages, through the official MCP client: a conflict says which tool reloads the state
it raced with."""

from __future__ import annotations

from memory.models import HandoffVersion, Memory, ProfileVersion
from tests.api.mcp.conftest import call_each, run, text_of


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
            [("memory_update", {"id": memory_id, "content": "The staging cluster runs Redis 8.", "expectedVersion": 7})],
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
