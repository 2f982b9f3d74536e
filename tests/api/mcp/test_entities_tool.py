"""memory_save's `entities` and the entity tags of memory_search through the official client: structured output,
text, the `ent` label, clear errors for bad entities, and no tags across palaces."""

from __future__ import annotations

from typing import Any

from memory.models import MemoryEntity
from tests.api.mcp.conftest import mcp_client, run, text_of


def test_save_states_entities_and_search_shows_tags_and_the_ent_cue(tokens: dict[str, str]) -> None:
    async def scenario() -> tuple[Any, Any, Any, Any]:
        async with mcp_client(tokens["alice"]) as c:
            saved = await c.call_tool(
                "memory_save",
                {
                    "content": "Zephyrine moved the billing queue to Valkey last sprint.",
                    "kind": "fact",
                    "entities": [{"name": "Zephyrine", "kind": "person", "aliases": ["Zeph"]}],
                },
            )
            bad = await c.call_tool("memory_save", {"content": "x is y", "kind": "fact", "entities": [{"name": ""}]})
            found = await c.call_tool("memory_search", {"query": "what did Zeph do with the billing queue?"})
            async with mcp_client(tokens["charlie"]) as outsider:
                theirs = await outsider.call_tool(
                    "memory_search", {"query": "what did Zeph do with the billing queue?"}
                )
            return saved, bad, found, theirs

    saved, bad, found, theirs = run(scenario())
    assert not saved.is_error, text_of(saved)
    item = saved.structured_content["items"][0]
    assert item["entitiesBy"] == "rules"
    assert {(e["name"], e["kind"], e["source"]) for e in item["entities"]} == {
        ("Zephyrine", "person", "agent"),
        ("Valkey", "tool", "rules"),  # a known tool (memory.knowledge.lexicon)
    }
    assert "entities: " in text_of(saved) and "Zephyrine (person, id " in text_of(saved) and "[rules]" in text_of(saved)

    assert bad.is_error and "name" in text_of(bad)  # refused by the schema with the field named

    assert not found.is_error, text_of(found)
    hit = found.structured_content["hits"][0]
    assert hit["id"] == item["id"] and hit["label"].endswith("+ ent")
    assert {e["name"] for e in hit["entities"]} == {"Zephyrine", "Valkey"}
    assert "[entities: " in text_of(found) and "Zephyrine (person, id " in text_of(found)
    # charlie sees neither the memory nor its entities (positive control: alice's search above)
    assert theirs.structured_content["hits"] == [] and "Zephyrine" not in text_of(theirs)
    assert MemoryEntity.objects.filter(memory_id=item["id"]).count() == 2


def test_batch_items_carry_their_own_entities(tokens: dict[str, str]) -> None:
    async def scenario() -> Any:
        async with mcp_client(tokens["alice"]) as c:
            return await c.call_tool(
                "memory_save",
                {
                    "items": [
                        {"content": "the nightly export runs on the old cron box", "kind": "fact",
                         "entities": [{"name": "cron box", "kind": "tool"}]},
                        {"content": "the export owner is on leave until june", "kind": "fact"},
                    ]
                },
            )  # fmt: skip

    result = run(scenario())
    assert not result.is_error, text_of(result)
    first, second = result.structured_content["items"]
    assert [(e["name"], e["source"]) for e in first["entities"]] == [("cron box", "agent")]
    assert second["entities"] == [] and second["entitiesBy"] == "rules"
