"""memory_search as of a time: the palace as it stood then, on world time (`as_of`) and record time (`known_at`).

The clock is moved with time-machine: a memory saved in January and corrected in March, searched as of February,
answers with the January text; forgotten since, it is still found then; saved later, it is not; and each hit
carries its entities' facts as they stood at that point."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import time_machine

from memory.knowledge import facts_write
from memory.lifecycle import memory_forget, memory_update
from memory.models import Entity, Memory, MemoryEntity
from memory.search import SearchRequest, memory_search
from palace.actors import Actor
from palace.models import Palace

JAN = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
FEB = datetime(2026, 2, 10, 9, 0, tzinfo=UTC)
MAR = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)
APR = datetime(2026, 4, 10, 9, 0, tzinfo=UTC)


def found(user: Any, query: str, **kwargs: Any) -> list[str]:
    result = memory_search(
        user=user, request=SearchRequest(query=query, **kwargs), reinforce=False, register_batch=False
    )
    return [h.memory.content for h in result.hits]


def test_a_corrected_memory_searched_before_the_correction_returns_the_old_text(
    alice: Any, alice_actor: Actor, save: Callable[..., Any]
) -> None:
    with time_machine.travel(JAN, tick=False):
        old = save("The team office is in Lisbon, near the river").memory
    with time_machine.travel(MAR, tick=False):
        memory_update(memory_id=old.pk, actor=alice_actor, content="The team office is in Porto, near the bridge")

    assert found(alice, "team office") == ["The team office is in Porto, near the bridge"]  # today
    assert found(alice, "team office", as_of=FEB) == ["The team office is in Lisbon, near the river"]
    assert found(alice, "team office", known_at=FEB) == ["The team office is in Lisbon, near the river"]
    assert found(alice, "team office", as_of=APR) == ["The team office is in Porto, near the bridge"]
    assert found(alice, "team office", known_at=APR, as_of=FEB) == ["The team office is in Lisbon, near the river"]


def test_forgotten_since_is_found_as_it_was_and_later_memories_are_not(
    alice: Any, alice_actor: Actor, save: Callable[..., Any]
) -> None:
    with time_machine.travel(JAN, tick=False):
        kept = save("Deploys happen on Tuesday mornings").memory
    with time_machine.travel(MAR, tick=False):
        memory_forget(memory_id=kept.pk, actor=alice_actor, reason="we deploy any day now")
        save("Deploys are frozen during the audit week")

    assert found(alice, "deploys") == ["Deploys are frozen during the audit week"]  # forgotten: gone today
    assert found(alice, "deploys", as_of=FEB) == ["Deploys happen on Tuesday mornings"]
    assert found(alice, "deploys", known_at=FEB) == ["Deploys happen on Tuesday mornings"]
    assert found(alice, "deploys", as_of=APR) == ["Deploys are frozen during the audit week"]
    assert found(alice, "deploys", known_at=datetime(2025, 12, 1, tzinfo=UTC)) == []


def test_known_at_is_record_time_and_as_of_is_world_time(alice: Any, save: Callable[..., Any]) -> None:
    """Learned in March about something that happened in January: on world time it was true in February; on record
    time Atrium did not know it yet."""
    with time_machine.travel(MAR, tick=False):
        save("The vendor contract was signed with Globex", occurred_at=JAN)

    assert found(alice, "vendor contract Globex", as_of=FEB) == ["The vendor contract was signed with Globex"]
    assert found(alice, "vendor contract Globex", known_at=FEB) == []
    assert found(alice, "vendor contract Globex", known_at=APR) == ["The vendor contract was signed with Globex"]


def test_hits_carry_their_entities_facts_at_that_point(
    alice: Any, alice_palace: Palace, alice_actor: Actor, save: Callable[..., Any]
) -> None:
    with time_machine.travel(JAN, tick=False):
        memory = save("Maria joined the platform team as its lead").memory
        first = facts_write(palace=alice_palace, actor=alice_actor, facts=[{"entity": "Maria", "content": "in Lisbon"}])
        entity = Entity.objects.get(key="maria")
        # the rules link "Maria" (a given name) at save already; the link is what matters here
        MemoryEntity.objects.get_or_create(palace=alice_palace, memory=memory, entity=entity)
    with time_machine.travel(MAR, tick=False):
        facts_write(
            palace=alice_palace,
            actor=alice_actor,
            facts=[{"entity": "Maria", "content": "in Porto", "replaces": first.written[0].fact.pk}],
        )

    def facts(**kwargs: Any) -> list[str]:
        result = memory_search(
            user=alice,
            request=SearchRequest(query="platform team lead", **kwargs),
            reinforce=False,
            register_batch=False,
        )
        assert [h.memory.pk for h in result.hits] == [memory.pk]
        return [v.fact.content for v in result.hits[0].facts]

    assert facts() == ["in Porto"]
    assert facts(as_of=FEB) == ["in Lisbon"]
    assert facts(known_at=FEB) == ["in Lisbon"]


def test_the_result_says_it_is_an_as_of_view(alice: Any, save: Callable[..., Any]) -> None:
    save("The staging database runs on port 5433")

    today = memory_search(
        user=alice, request=SearchRequest(query="staging database"), reinforce=False, register_batch=False
    )
    then = memory_search(
        user=alice,
        request=SearchRequest(query="staging database", as_of=APR, known_at=MAR),
        reinforce=False,
        register_batch=False,
    )

    assert today.view == "current" and today.as_of is None
    assert then.view == (
        "as of 2026-04-10T09:00:00+00:00 (world time) and as known at 2026-03-10T09:00:00+00:00 (record time)"
    )


def test_an_explicit_status_keeps_its_plain_meaning(alice: Any, alice_actor: Actor, save: Callable[..., Any]) -> None:
    with time_machine.travel(JAN, tick=False):
        gone = save("The old wiki lives at wiki.example.org").memory
    with time_machine.travel(MAR, tick=False):
        memory_forget(memory_id=gone.pk, actor=alice_actor)

    assert found(alice, "old wiki", status=Memory.Status.FORGOTTEN, as_of=APR) == [gone.content]
    assert found(alice, "old wiki", status=Memory.Status.FORGOTTEN, known_at=FEB) == [gone.content]
    assert found(alice, "old wiki", status=Memory.Status.ACTIVE, as_of=APR) == []
