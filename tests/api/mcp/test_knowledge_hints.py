"""Issue 26, knowledge the agent is told about, through the official MCP client: a changed count ("3 data nodes" /
"6 data nodes") is an open contradiction even though e5 rates the pair below the rules' band, and a second current
fact with the same subject and predicate says which fact it sits beside and how to replace it."""

from __future__ import annotations

from typing import Any

from memory.models import Adjudication, Edge, Entity, Fact, Memory
from palace.models import OpLog
from tests.api.mcp.conftest import call_each, run, text_of

NODES_3 = "The search cluster in prod runs 3 data nodes."
NODES_6 = "The search cluster in prod runs 6 data nodes."
NODES_3_AGAIN = "The prod search cluster runs 3 data nodes."


def _save(token: str, *contents: str) -> list[Any]:
    results = run(call_each(token, [("memory_save", {"content": c, "kind": "fact"}) for c in contents]))
    for r in results:
        assert not r.is_error, text_of(r)
    return results


def test_a_changed_count_is_an_open_contradiction_and_a_restated_count_is_not(tokens: dict[str, str]) -> None:
    first, changed = _save(tokens["alice"], NODES_3, NODES_6)
    old = Memory.objects.get(content=NODES_3)
    new = Memory.objects.get(content=NODES_6)
    edge = Edge.objects.get(kind=Edge.Kind.CONTRADICTS, status=Edge.Status.PENDING)
    assert {edge.from_memory_id, edge.to_memory_id} == {old.pk, new.pk}
    text = text_of(changed)
    assert f"edge={edge.pk}" in text and "memory_resolve" in text, text
    ruling = Adjudication.objects.get(edge=edge)
    assert ruling.similarity < 0.95  # below the rules' band: the number rule is what caught it
    assert "a number changed (3 → 6 data)" in ruling.reason, ruling.reason
    assert "judged by the rules" in text and "a number changed (3 → 6 data)" in text, text

    # control: the same count in other words opens nothing
    (again,) = _save(tokens["alice"], NODES_3_AGAIN)
    assert Edge.objects.filter(kind=Edge.Kind.CONTRADICTS).count() == 1, text_of(again)
    assert "a number changed" not in text_of(again)


def test_a_second_current_fact_with_the_same_predicate_says_how_to_replace_the_first(
    tokens: dict[str, str],
) -> None:
    lisbon = {"entity": "Maria", "predicate": "lives_in", "content": "Maria lives in Lisbon"}
    porto = {"entity": "Maria", "predicate": "lives_in", "content": "Maria lives in Porto"}
    works = {"entity": "Maria", "predicate": "works_at", "content": "Maria works at Acme"}
    first, second, listed = run(
        call_each(
            tokens["alice"],
            [
                ("memory_facts", {"facts": [lisbon, works]}),
                ("memory_facts", {"facts": [porto]}),
                ("memory_facts", {"entity": "Maria"}),
            ],
        )
    )
    lisbon_id, works_id = (w["id"] for w in first.structured_content["written"])
    assert first.structured_content["written"][1]["alongside"] == []  # control: another predicate is no pair
    (written,) = second.structured_content["written"]
    porto_id = written["id"]
    assert written["alongside"] == [lisbon_id] and written["adopted"] is False
    text = text_of(second)
    assert f"also current with the same entity and predicate: fact={lisbon_id}" in text, text
    assert f"send it again with replaces={lisbon_id}" in text, text
    marked = {f["id"]: f["alsoCurrent"] for f in listed.structured_content["facts"]}
    assert marked == {lisbon_id: [porto_id], porto_id: [lisbon_id], works_id: []}
    assert f"also current with the same predicate: fact={porto_id}" in text_of(listed)

    # following the hint: the Porto fact becomes Lisbon's successor, no third fact is written
    (again,) = run(call_each(tokens["alice"], [("memory_facts", {"facts": [{**porto, "replaces": lisbon_id}]})]))
    (adopted,) = again.structured_content["written"]
    assert adopted["id"] == porto_id and adopted["replaces"] == lisbon_id and adopted["adopted"] is True
    assert Fact.objects.filter(entity__name="Maria").count() == 3
    assert Fact.objects.get(pk=porto_id).replaces_id == lisbon_id
    assert Fact.objects.get(pk=lisbon_id).superseded_at is not None
    (after,) = run(call_each(tokens["alice"], [("memory_facts", {"entity": "Maria"})]))
    assert sorted(f["id"] for f in after.structured_content["facts"]) == sorted([porto_id, works_id])
    assert all(f["alsoCurrent"] == [] for f in after.structured_content["facts"])


def test_a_stated_full_name_is_not_folded_into_another_entity_its_alias_names(tokens: dict[str, str]) -> None:
    bob = {"name": "Bob", "kind": "person"}
    bob_lee = {"name": "Bob Lee", "kind": "person", "aliases": ["Bob"]}
    first, full, again = run(
        call_each(
            tokens["alice"],
            [
                ("memory_save", {"content": "Bob owns the billing exports.", "kind": "fact", "entities": [bob]}),
                ("memory_save", {"content": "The new hire pairs on payments.", "kind": "fact", "entities": [bob_lee]}),
                ("memory_save", {"content": "Ask him about the exports.", "kind": "fact", "entities": [bob]}),
            ],
        )
    )
    for r in (first, full, again):
        assert not r.is_error, text_of(r)
    old = Entity.objects.get(key="bob")
    new = Entity.objects.get(key="bob lee")  # created, not folded into "Bob"
    assert new.kind == "person" and new.aliases == ["Bob"]
    assert old.aliases == [] and old.alias_keys == []  # "Bob" did not gain "Bob Lee" as an alias
    (item,) = full.structured_content["items"]
    assert item["entitiesNote"] == (
        f"created Bob Lee (id {new.pk}) beside Bob (id {old.pk}), which one of its aliases also names: merge them "
        f"(entity_id {new.pk} into {old.pk}) if they are one"
    )
    assert item["entitiesNote"] in text_of(full)
    op = OpLog.objects.get(op="memory.save", target_id=item["id"])
    assert op.detail["entities"]["ambiguous"] == [[new.pk, old.pk]]
    # control: "Bob" by its own name still reuses the existing entity, and says nothing
    assert [e["id"] for e in again.structured_content["items"][0]["entities"]] == [old.pk]
    assert again.structured_content["items"][0]["entitiesNote"] == ""
    assert Entity.objects.count() == 2
