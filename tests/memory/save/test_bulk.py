"""Bulk saves (memory/save/bulk.py): a batch, an import merge and a capture all go through `memory_save_bulk`; the
judge's model is not asked, and every contradiction a bulk save opens keeps the rules' ruling, labelled `bulk`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory.judge import judge_settings_update
from memory.models import Adjudication, Edge
from memory.save import MAX_BATCH_ITEMS, ItemError, SaveResult, memory_save, memory_save_batch, memory_save_bulk
from palace.actors import Actor
from palace.models import OpLog, Palace
from tests.fakes.openai_server import CHAT_PATH, FakeOpenAI, chat_json

OLD = "The API server listens on port 8000."
NEW = "The API server listens on port 8001."


def _judge_model_on(make_user: Callable[..., Any], server: FakeOpenAI) -> None:
    root = Actor.for_user(make_user("root", admin=True))
    judge_settings_update(
        actor=root, enabled=True, base_url=server.base_url, model="judge-1", timeout_ms=2000, api_key="sk-test-123456"
    )


def test_a_batch_that_opens_an_edge_keeps_the_rules_ruling_labelled_bulk(
    alice_palace: Palace, alice_actor: Actor, make_user: Callable[..., Any]
) -> None:
    with FakeOpenAI() as server:
        _judge_model_on(make_user, server)
        old = memory_save(palace=alice_palace, actor=alice_actor, content=OLD, kind="fact").memory
        assert old is not None
        batch = memory_save_batch(
            palace=alice_palace,
            actor=alice_actor,
            items=[{"content": NEW, "kind": "fact"}, {"content": "Releases are tagged from main.", "kind": "decision"}],
        )
        assert server.requests_to(CHAT_PATH) == []  # a bulk save asks the judge's model nothing

        # The control: the judge is on, and a single save of the same kind of contradiction does ask it.
        server.script_chat([chat_json({"same": 0.05, "contradicts": 0.95, "reason": "different ports"})] * 2)
        single = memory_save(palace=alice_palace, actor=alice_actor, content="The API server listens on port 8002.",
                             kind="fact")  # fmt: skip
        assert server.requests_to(CHAT_PATH) and single.edges

    result = batch.items[0]
    assert isinstance(result, SaveResult) and result.memory is not None
    assert result.disposition == "defer" and result.contradicts == [old.pk] and len(result.edges) == 1
    edge = Edge.objects.get(pk=result.edges[0])
    assert (edge.kind, edge.status, edge.from_memory_id, edge.to_memory_id) == (
        "contradicts", "pending", result.memory.pk, old.pk
    )  # fmt: skip
    ruling = Adjudication.objects.get(edge=edge)
    assert (ruling.verdict, ruling.contradiction, ruling.model_took_part, ruling.fallback_reason) == (
        "defer", True, False, "bulk"
    )  # fmt: skip
    assert ruling.p_same is None and ruling.model_name == ""
    assert ruling.reason.startswith("rules: similarity") and "+8001" in ruling.reason and "-8000" in ruling.reason
    assert (ruling.new_memory_id, ruling.neighbour_id) == (result.memory.pk, old.pk)
    assert "judged by the rules (bulk)" in result.hint
    assert OpLog.objects.get(op="memory.save", target_id=result.memory.pk).detail["judged_by"] == ["rules"]
    # The single save's edge is the model's: `bulk` labels only what a bulk save ruled.
    assert Adjudication.objects.get(edge_id=single.edges[0]).model_took_part
    # Every open edge has its ruling.
    assert not Edge.objects.filter(kind="contradicts").exclude(pk__in=Adjudication.objects.values("edge_id")).exists()


def test_a_bulk_save_takes_any_number_of_items_and_reports_each_at_its_index(
    alice_palace: Palace, alice_actor: Actor
) -> None:
    items: list[Any] = [{"content": f"Service number {i} runs in rack {i * 3} of hall B.", "kind": "fact"}
                        for i in range(23)]  # fmt: skip
    items[12] = {"content": "A memory of an unknown kind.", "kind": "rumour"}
    result = memory_save_bulk(palace=alice_palace, actor=alice_actor, items=items, source="capture")
    assert (result.count, result.failed, len(result.items)) == (23, 1, 23)
    bad = result.items[12]
    assert isinstance(bad, ItemError) and bad.index == 12 and "kind" in bad.message
    assert all(isinstance(r, SaveResult) and r.memory is not None for i, r in enumerate(result.items) if i != 12)
    assert OpLog.objects.filter(op__in=["memory.save", "memory.merge"], detail__source="capture").count() == 22
    # Templated lines that differ in numbers are suspected contradictions: each edge, in every chunk, is explained.
    edges = [e for r in result.items if isinstance(r, SaveResult) for e in r.edges]
    assert len(edges) > MAX_BATCH_ITEMS
    rulings = dict(Adjudication.objects.filter(edge_id__in=edges).values_list("edge_id", "fallback_reason"))
    assert rulings == dict.fromkeys(edges, "bulk")


def test_a_chunk_disposes_each_item_as_saving_them_one_by_one_would(alice: Any, bob: Any) -> None:
    # A chunk holds its new memories until its end (memory/save/pending.py) and asks the neighbours of all its items
    # among the rows before it in one statement: an item's neighbours are those rows plus the chunk's earlier new
    # memories. The same items saved one by one (each an inserted row before the next) in another palace must get
    # the same dispositions, against the same memories: restating a memory from before the chunk, restating an
    # earlier item of the chunk, contradicting either, and new ones.
    from palace.models import Palace as PalaceModel

    before = [OLD, "Code review needs two approvals.", "Alice prefers dark mode in every editor."]
    items = [
        "The API server listens on port 8000.",  # restates a memory from before the chunk
        "The nightly backup runs at 02:00 UTC.",  # new
        "Code review needs two approvals.",  # restates one from before
        "The nightly backup runs at 02:00 UTC.",  # restates an earlier item of the chunk
        "The nightly backup runs at 03:00 UTC.",  # contradicts an earlier item of the chunk
        NEW,  # contradicts one from before
        "Deploys to production happen on Thursdays after the standup.",  # new
        "Deploys to production happen on Thursdays after the standup.",  # restates the item before
    ]

    def run(user: Any, bulk: bool) -> list[tuple[str, Any, list[Any]]]:
        palace, actor = PalaceModel.objects.get(personal_owner=user), Actor.for_user(user)
        for text in before:
            memory_save(palace=palace, actor=actor, content=text, kind="fact", source="backfill")
        if bulk:
            results = memory_save_bulk(
                palace=palace,
                actor=actor,
                items=[{"content": t, "kind": "fact"} for t in items],
                source="backfill",
                chunk_items=len(items),
            ).items
        else:
            results = [
                memory_save_bulk(
                    palace=palace, actor=actor, items=[{"content": t, "kind": "fact"}], source="backfill"
                ).items[0]
                for t in items
            ]
        assert all(isinstance(r, SaveResult) for r in results), results
        # by content, so the two palaces' ids compare
        content = {m.pk: m.content for m in palace.memories.all()}
        out = []
        for r in results:
            assert isinstance(r, SaveResult)
            target = content.get(r.merged_into) if r.merged_into else None
            against = sorted(content[e.to_memory_id] for e in Edge.objects.filter(pk__in=r.edges))
            out.append((r.disposition, target, against))
        return out

    chunked, one_by_one = run(alice, bulk=True), run(bob, bulk=False)
    assert chunked == one_by_one
    dispositions = [d for d, _, _ in chunked]
    assert dispositions[0] == dispositions[2] == dispositions[3] == dispositions[7] == "merge"  # all four kinds met
    assert chunked[3][1] == "The nightly backup runs at 02:00 UTC." and chunked[4][2] == [chunked[3][1]]
    assert chunked[5][2] == [OLD]
