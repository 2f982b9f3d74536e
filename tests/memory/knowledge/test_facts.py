"""memory.knowledge.facts: writing facts (batches, replacement that ends only the replaced fact, op rows) and reading
them on both time axes (as_of: valid time; known_at: record time), with time-machine moving the clock."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine

from memory.knowledge.facts import MAX_FACTS, fact_name_key, facts_query, facts_write
from memory.models import Entity, Fact
from palace.actors import Actor
from palace.errors import InvalidInput, PermissionDenied
from palace.models import OpLog, Palace

JAN = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
MAR = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)
MAY = datetime(2026, 5, 10, 9, 0, tzinfo=UTC)


def write(palace: Palace, actor: Actor, *facts: Any) -> Any:
    return facts_write(palace=palace, actor=actor, facts=list(facts))


def contents(result: Any) -> list[str]:
    return [v.fact.content for v in result.facts]


def test_name_key_folds_case_width_space_and_end_punctuation() -> None:
    assert fact_name_key("  Ｍaria   GARCÍA!! ") == "maria garcía"
    assert fact_name_key("node.js") == "node.js"
    assert fact_name_key("“Atrium”") == "atrium"


def test_replacement_ends_only_the_replaced_fact(alice_palace: Palace, alice_actor: Actor) -> None:
    with time_machine.travel(JAN, tick=False):
        first = write(
            alice_palace,
            alice_actor,
            {"entity": "Maria", "predicate": "lives_in", "content": "Maria in Lisbon", "valid_from": "2025-06-01"},
            {"entity": "maria ", "predicate": "works_at", "content": "Maria works at Acme"},
        )
    lives, works = (w.fact for w in first.written)
    assert first.failed == []
    assert [w.entity_created for w in first.written] == [True, False]  # one entity, found again by its key
    with time_machine.travel(MAR, tick=False):
        second = write(
            alice_palace,
            alice_actor,
            {"entity": "Maria", "content": "Maria lives in Porto", "replaces": lives.pk, "valid_from": "2026-03-01"},
        )
    moved = second.written[0].fact

    lives.refresh_from_db()
    works.refresh_from_db()
    assert lives.valid_to == datetime(2026, 3, 1, tzinfo=UTC)
    assert lives.superseded_at == MAR
    assert moved.replaces_id == lives.pk and moved.recorded_at == MAR
    # The unrelated fact of the same entity survives untouched.
    assert works.valid_to is None and works.superseded_at is None
    now = facts_query(palace_ids=[alice_palace.pk], entity="MARIA")
    assert sorted(contents(now)) == ["Maria lives in Porto", "Maria works at Acme"]
    ops = OpLog.objects.filter(palace=alice_palace, op__in=["fact.write", "entity.create"])
    assert sorted(ops.values_list("op", flat=True)) == ["entity.create", "fact.write", "fact.write", "fact.write"]
    assert ops.get(target_id=moved.pk, op="fact.write").detail["replaces"] == lives.pk


def test_bad_entries_fail_alone_with_a_reason(alice_palace: Palace, alice_actor: Actor) -> None:
    done = write(alice_palace, alice_actor, {"entity": "Acme", "content": "Acme ships widgets"})
    old = done.written[0].fact
    write(alice_palace, alice_actor, {"content": "Acme ships gadgets", "replaces": old.pk})

    result = write(
        alice_palace,
        alice_actor,
        {"entity": "Acme", "content": ""},
        {"entity": "Acme", "content": "ok one"},
        {"entity": "Acme", "content": "x", "valid_from": "March"},
        {"entity": "Acme", "content": "again", "replaces": old.pk},
        {"content": "no entity"},
        {"entityId": 999999, "content": "nowhere"},
        "not an object",
        {"entity": "Acme", "content": "y", "colour": "red"},
        {"entity": "Acme", "content": "too " * 600},
    )

    assert [w.index for w in result.written] == [1]
    reasons = {f.index: f.reason for f in result.failed}
    assert reasons[0] == "content is empty"
    assert "ISO 8601" in reasons[2]
    assert reasons[3].startswith(f"fact #{old.pk} was already replaced by #")
    assert "name the entity" in reasons[4]
    assert "not found" in reasons[5]
    assert "object" in reasons[6]
    assert "colour" in reasons[7]
    assert "at most" in reasons[8]
    assert Fact.objects.filter(entity__key="acme").count() == 3  # nothing half-written


def test_batch_size_and_write_role_are_checked(
    alice: Any, bob: Any, project: Palace, alice_actor: Actor, bob_editor: Any
) -> None:
    with pytest.raises(InvalidInput):
        write(project, alice_actor, *({"entity": "X", "content": f"fact {i}"} for i in range(MAX_FACTS + 1)))
    from palace.services import member_set

    assert write(project, Actor.for_user(bob), {"entity": "X", "content": "an editor writes"}).written  # control
    member_set(palace=project, user=bob, role="viewer", actor=Actor.for_system("tests"))
    with pytest.raises(PermissionDenied):
        write(project, Actor.for_user(bob), {"entity": "X", "content": "a viewer does not"})
    assert Fact.objects.filter(palace=project).count() == 1


def test_as_of_shows_what_was_true_then(alice_palace: Palace, alice_actor: Actor) -> None:
    with time_machine.travel(JAN, tick=False):
        lives = write(
            alice_palace, alice_actor, {"entity": "Maria", "content": "in Lisbon", "valid_from": "2025-06-01"}
        ).written[0]
    with time_machine.travel(MAR, tick=False):
        write(alice_palace, alice_actor, {"entity": "Maria", "content": "in Porto", "replaces": lives.fact.pk})
        write(alice_palace, alice_actor, {"entity": "Maria", "content": "learns Go", "valid_from": "2026-02-01"})

    ids = [alice_palace.pk]
    assert contents(facts_query(palace_ids=ids, entity="Maria", as_of=datetime(2025, 12, 1, tzinfo=UTC))) == [
        "in Lisbon"
    ]
    assert contents(facts_query(palace_ids=ids, entity="Maria", as_of=datetime(2026, 2, 15, tzinfo=UTC))) == [
        "in Lisbon",
        "learns Go",
    ]
    assert sorted(contents(facts_query(palace_ids=ids, entity="Maria"))) == ["in Porto", "learns Go"]
    before_anything = facts_query(palace_ids=ids, entity="Maria", as_of=datetime(2025, 1, 1, tzinfo=UTC))
    assert before_anything.facts == [] and before_anything.entity is not None


def test_known_at_shows_what_atrium_knew_then(alice_palace: Palace, alice_actor: Actor) -> None:
    with time_machine.travel(JAN, tick=False):
        lives = write(alice_palace, alice_actor, {"entity": "Maria", "content": "in Lisbon"}).written[0].fact
    with time_machine.travel(MAY, tick=False):
        # Learned in May that she had moved on 1 March, and that she had a cat since February.
        write(
            alice_palace,
            alice_actor,
            {"entity": "Maria", "content": "in Porto", "replaces": lives.pk, "valid_from": "2026-03-01"},
            {"entity": "Maria", "content": "has a cat", "valid_from": "2026-02-01"},
        )
    ids = [alice_palace.pk]

    then = facts_query(palace_ids=ids, entity="Maria", known_at=MAR)
    assert contents(then) == ["in Lisbon"]
    assert then.facts[0].valid_to is None and then.facts[0].state == "current"  # open-ended, as known then
    # Today, on valid time 10 March, she was in Porto already (and had the cat); as known in March, in Lisbon.
    assert sorted(contents(facts_query(palace_ids=ids, entity="Maria", as_of=MAR))) == ["has a cat", "in Porto"]
    assert contents(facts_query(palace_ids=ids, entity="Maria", as_of=MAR, known_at=MAR)) == ["in Lisbon"]
    assert facts_query(palace_ids=ids, entity="Maria", known_at=datetime(2025, 1, 1, tzinfo=UTC)).facts == []


def test_include_invalid_lists_replaced_facts_marked(alice_palace: Palace, alice_actor: Actor) -> None:
    with time_machine.travel(JAN, tick=False):
        old = write(alice_palace, alice_actor, {"entity": "Maria", "content": "in Lisbon"}).written[0].fact
    with time_machine.travel(MAR, tick=False):
        new = write(alice_palace, alice_actor, {"entity": "Maria", "content": "in Porto", "replaces": old.pk})

    current = facts_query(palace_ids=[alice_palace.pk], entity="Maria")
    every = facts_query(palace_ids=[alice_palace.pk], entity="Maria", include_invalid=True)

    assert contents(current) == ["in Porto"] and current.hidden == 1
    states = {v.fact.content: (v.state, v.replaced_by) for v in every.facts}
    assert states == {"in Lisbon": ("replaced", new.written[0].fact.pk), "in Porto": ("current", None)}


def test_query_creates_nothing_and_suggests_or_lists_candidates(alice_palace: Palace, alice_actor: Actor) -> None:
    write(alice_palace, alice_actor, {"entity": "Maria Garcia", "content": "a fact"})
    write(alice_palace, alice_actor, {"entity": "Mario Rossi", "content": "another"})
    Entity.objects.filter(key__in=["maria garcia", "mario rossi"]).update(alias_keys=["mg"])
    before = Entity.objects.count()

    miss = facts_query(palace_ids=[alice_palace.pk], entity="Maria Garcya")
    ambiguous = facts_query(palace_ids=[alice_palace.pk], entity="MG")
    hit = facts_query(palace_ids=[alice_palace.pk], entity="maria garcia")

    assert miss.entity is None and [e.name for e in miss.suggestions][0] == "Maria Garcia"
    assert ambiguous.entity is None and {e.name for e in ambiguous.candidates} == {"Maria Garcia", "Mario Rossi"}
    assert hit.entity is not None and contents(hit) == ["a fact"]  # positive control
    assert Entity.objects.count() == before


def test_an_entity_in_a_palace_you_cannot_read_is_not_found(
    alice: Any, charlie: Any, alice_palace: Palace, alice_actor: Actor
) -> None:
    from palace.errors import NotFound
    from palace.selectors import palaces_readable

    entity = write(alice_palace, alice_actor, {"entity": "Secret", "content": "hidden"}).written[0].fact.entity
    alices = list(palaces_readable(user=alice).values_list("pk", flat=True))
    charlies = list(palaces_readable(user=charlie).values_list("pk", flat=True))

    assert contents(facts_query(palace_ids=alices, entity_id=entity.pk)) == ["hidden"]
    with pytest.raises(NotFound):
        facts_query(palace_ids=charlies, entity_id=entity.pk)
    assert facts_query(palace_ids=charlies, entity="Secret").suggestions == []
