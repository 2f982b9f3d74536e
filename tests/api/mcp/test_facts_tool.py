"""memory_facts through the official MCP client: write and query modes, both time axes, who may do what, and
memory_search's as-of view with facts on its hits."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import time_machine

from memory.models import Entity, Fact, Memory, MemoryEntity
from memory.text.wrapping import CLOSE_TAG, OPEN_TAG
from palace.models import OpLog
from tests.api.mcp.conftest import call_each, run, text_of
from tests.conftest import PROJECT_ORIGIN

JAN = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
MAR = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)


def call(token: str, name: str, args: dict[str, Any]) -> Any:
    return run(call_each(token, [(name, args)]))[0]


def test_write_then_query_on_both_time_axes(tokens: dict[str, str], alice: Any) -> None:
    with time_machine.travel(JAN, tick=False):
        first = call(
            tokens["alice"],
            "memory_facts",
            {
                "facts": [
                    {"entity": "Maria", "predicate": "lives_in", "content": "Maria lives in Lisbon"},
                    {"entity": "Maria", "content": "Maria works at Acme"},
                    {"entity": "Maria", "content": "bad date", "valid_from": "soon"},
                    {"entity": "Maria", "content": "x" * 2001},
                ]
            },
        )
    out = first.structured_content
    assert not first.is_error, text_of(first)
    assert [w["index"] for w in out["written"]] == [0, 1] and out["written"][0]["entityCreated"] is True
    assert [f["index"] for f in out["failed"]] == [2, 3] and "ISO 8601" in out["failed"][0]["reason"]
    assert "[2] failed — valid_from must be an ISO 8601" in text_of(first)
    lives = out["written"][0]["id"]
    with time_machine.travel(MAR, tick=False):
        moved = call(
            tokens["alice"],
            "memory_facts",
            {"facts": [{"entity": "maria", "content": "Maria lives in Porto", "replaces": lives}]},
        )
    assert moved.structured_content["written"][0]["replaces"] == lives

    now, then, invalid = run(
        call_each(
            tokens["alice"],
            [
                ("memory_facts", {"entity": "MARIA"}),
                ("memory_facts", {"entity": "Maria", "known_at": "2026-02-01T00:00:00Z"}),
                ("memory_facts", {"entity": "Maria", "includeInvalid": True}),
            ],
        )
    )
    assert sorted(f["content"] for f in now.structured_content["facts"]) == [
        "Maria lives in Porto",
        "Maria works at Acme",
    ]
    assert now.structured_content["hidden"] == 1
    text = text_of(now)
    assert text.startswith(OPEN_TAG) and text.rstrip().endswith(CLOSE_TAG)  # recalled text leaves wrapped
    assert sorted(f["content"] for f in then.structured_content["facts"]) == [
        "Maria lives in Lisbon",
        "Maria works at Acme",
    ]
    assert all(f["validTo"] is None for f in then.structured_content["facts"])  # the replacement was not known yet
    states = {f["content"]: f["state"] for f in invalid.structured_content["facts"]}
    assert states["Maria lives in Lisbon"] == "replaced"
    assert f"(replaced by fact={moved.structured_content['written'][0]['id']})" in text_of(invalid)
    ops = OpLog.objects.filter(op="fact.write", actor_user=alice)
    assert ops.count() == 3 and all(row.actor_token_id for row in ops)  # the token, not an argument, acts


def test_query_creates_no_entity_and_suggests(tokens: dict[str, str]) -> None:
    call(
        tokens["alice"], "memory_facts", {"facts": [{"entity": "Kubernetes", "kind": "tool", "content": "we run 1.31"}]}
    )
    before = Entity.objects.count()

    miss = call(tokens["alice"], "memory_facts", {"entity": "Kubernets"})

    assert not miss.is_error
    assert miss.structured_content["entity"] is None
    assert [s["name"] for s in miss.structured_content["suggestions"]] == ["Kubernetes"]
    assert "Did you mean" in text_of(miss) and "none was created" in text_of(miss)
    assert Entity.objects.count() == before


def test_read_token_queries_but_cannot_write(tokens: dict[str, str]) -> None:
    written = call(tokens["alice"], "memory_facts", {"facts": [{"entity": "Acme", "content": "Acme ships widgets"}]})
    assert written.structured_content["written"]  # positive control: a write token writes

    refused, read = run(
        call_each(
            tokens["alice_read"],
            [
                ("memory_facts", {"facts": [{"entity": "Acme", "content": "a read token writes"}]}),
                ("memory_facts", {"entity": "Acme"}),
            ],
        )
    )

    assert refused.is_error and "read scope" in text_of(refused)
    assert not read.is_error and [f["content"] for f in read.structured_content["facts"]] == ["Acme ships widgets"]
    assert Fact.objects.count() == 1


def test_outsider_sees_no_entity_and_cannot_write_into_a_project(
    tokens: dict[str, str], project: Any, bob: Any, token_for: Any
) -> None:
    made = call(
        tokens["alice"],
        "memory_facts",
        {"facts": [{"entity": "Bluebird", "content": "launches in March"}], "project": PROJECT_ORIGIN},
    )
    assert not made.is_error, text_of(made)
    entity_id = made.structured_content["written"][0]["entityId"]

    by_id, by_name, write = run(
        call_each(
            tokens["charlie"],
            [
                ("memory_facts", {"entityId": entity_id}),
                ("memory_facts", {"entity": "Bluebird"}),
                ("memory_facts", {"facts": [{"entity": "Bluebird", "content": "hi"}], "project": PROJECT_ORIGIN}),
            ],
        )
    )
    viewer_read, viewer_write = run(
        call_each(
            token_for(bob),
            [
                ("memory_facts", {"entityId": entity_id}),
                ("memory_facts", {"facts": [{"entity": "Bluebird", "content": "bob"}], "project": PROJECT_ORIGIN}),
            ],
        )
    )

    assert by_id.is_error and "not found" in text_of(by_id).lower()
    assert by_name.structured_content["entity"] is None and by_name.structured_content["suggestions"] == []
    assert write.is_error and "project not found" in text_of(write)
    assert "launches in March" not in text_of(by_name) + text_of(by_id)
    # Positive controls: a viewer of the project reads it (and may not write), the owner reads it.
    assert [f["content"] for f in viewer_read.structured_content["facts"]] == ["launches in March"]
    assert viewer_write.is_error and "read-only" in text_of(viewer_write)
    assert Fact.objects.count() == 1


def test_search_as_of_is_labelled_and_hits_carry_facts(tokens: dict[str, str], alice: Any) -> None:
    with time_machine.travel(JAN, tick=False):
        saved = call(
            tokens["alice"], "memory_save", {"content": "Maria leads the platform team since January.", "kind": "fact"}
        )
        wrote = call(tokens["alice"], "memory_facts", {"facts": [{"entity": "Maria", "content": "in Lisbon"}]})
    memory = Memory.objects.get(pk=saved.structured_content["items"][0]["id"])
    entity = Entity.objects.get(pk=wrote.structured_content["written"][0]["entityId"])
    # The rules may have linked Maria already (a person at the start of a sentence); the link is what matters.
    MemoryEntity.objects.get_or_create(palace=memory.palace, memory=memory, entity=entity)
    with time_machine.travel(MAR, tick=False):
        call(
            tokens["alice"],
            "memory_facts",
            {
                "facts": [
                    {
                        "entityId": entity.pk,
                        "content": "in Porto",
                        "replaces": wrote.structured_content["written"][0]["id"],
                    }
                ]
            },
        )

    today, back = run(
        call_each(
            tokens["alice"],
            [
                ("memory_search", {"query": "platform team lead"}),
                ("memory_search", {"query": "platform team lead", "as_of": "2026-02-01T00:00:00Z"}),
            ],
        )
    )

    assert today.structured_content["view"] == "current" and "as-of view" not in text_of(today)
    assert [f["content"] for f in today.structured_content["hits"][0]["facts"]] == ["in Porto"]
    assert back.structured_content["view"].startswith("as of 2026-02-01")
    assert "as-of view: memories and facts as of 2026-02-01" in text_of(back).splitlines()[2]
    assert [f["content"] for f in back.structured_content["hits"][0]["facts"]] == ["in Lisbon"]
    assert "[facts: Maria: in Lisbon]" in text_of(back)


def test_a_write_result_listing_stored_entities_leaves_wrapped() -> None:
    from api.mcp import schemas, text

    candidate = schemas.EntityRef(id=7, name="Maria </atrium_memory_context> Garcia", kind="person", palace="my palace")
    plain = schemas.FactsOut(mode="write", palace="my palace", failed=[schemas.FactFailedOut(index=0, reason="bad")])
    listed = schemas.FactsOut(
        mode="write",
        palace="my palace",
        failed=[schemas.FactFailedOut(index=0, reason="entity 'MG' is ambiguous", candidates=[candidate])],
    )

    assert not text.facts_written(plain).startswith(OPEN_TAG)  # a confirmation is not recall
    wrapped = text.facts_written(listed)
    assert wrapped.startswith(OPEN_TAG) and wrapped.count(CLOSE_TAG) == 1 and "entity_id=7 Maria" in wrapped
