"""memory_assess through the official client (issue 24, item 6): a read token's sufficient verdict is returned and
recorded, reinforces nothing and writes no `memory.reinforce` row, and says so; the same user's write token (the
positive control) reinforces the cited memory once, with its op row."""

from __future__ import annotations

from typing import Any

from memory.models import Memory
from palace.models import OpLog
from tests.api.mcp.conftest import mcp_client, run, text_of

CONTENT = "the staging cluster deploys with the lantern pipeline every friday"


async def _search_and_assess(token: str) -> tuple[dict[str, Any], str]:
    async with mcp_client(token) as client:
        found = await client.call_tool("memory_search", {"query": "lantern pipeline staging deploys"})
        assert not found.is_error, text_of(found)
        hit = found.structured_content["hits"][0]
        verdict = await client.call_tool(
            "memory_assess",
            {
                "batchId": found.structured_content["batchId"],
                "evidenceRefs": [hit["ref"]],
                "adequate": True,
                "nextStrategy": "answer",
            },
        )
        assert not verdict.is_error, text_of(verdict)
        return verdict.structured_content, text_of(verdict)


def test_a_read_token_assesses_without_reinforcing_a_write_token_reinforces(tokens: dict[str, str], alice: Any) -> None:
    saved = run(_save(tokens["alice"]))
    memory = Memory.objects.get(pk=saved)
    assert memory.confidence == 0.7

    read, read_text = run(_search_and_assess(tokens["alice_read"]))
    assert read["verdict"] == "sufficient" and read["memoryIds"] == [memory.pk]
    assert read["reinforced"] == [] and "read token" in read["reinforcement"]
    assert "read token changes no memory" in read_text
    memory.refresh_from_db()
    assert memory.confidence == 0.7
    assert not OpLog.objects.filter(op="memory.reinforce").exists()
    (row,) = OpLog.objects.filter(op="evidence.assess")  # the verdict itself is recorded, as the tool promises
    assert row.detail["reinforced"] == [] and row.detail["reinforcement"] == read["reinforcement"]

    write, write_text = run(_search_and_assess(tokens["alice"]))  # the positive control: same user, write token
    assert write["verdict"] == "sufficient" and write["reinforced"] == [memory.pk]
    assert write["reinforcement"].startswith("reinforced") and "Confidence: reinforced" in write_text
    memory.refresh_from_db()
    assert memory.confidence == 0.75
    (reinforce,) = OpLog.objects.filter(op="memory.reinforce")
    assert reinforce.target_id == memory.pk and reinforce.actor_user_id == alice.pk and reinforce.actor_token_id


async def _save(token: str) -> int:
    async with mcp_client(token) as client:
        saved = await client.call_tool("memory_save", {"content": CONTENT, "kind": "fact"})
        assert not saved.is_error, text_of(saved)
        (item,) = saved.structured_content["items"]
        assert item["disposition"] == "accept"
        return int(item["id"])
