"""Entities (memory/knowledge/extraction.py, memory/knowledge/rules.py): extraction by rule (Latin, code, handles,
repositories, Chinese) and by the model (fake server, with its fallback labels), resolution (reuse, miss, aliases), the
agent's stated entities, a failure that never blocks the write, and in search: tags on every hit, the `ent` cue,
isolation."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from memory.knowledge import entities_for_memories, entity_cues, linking, normalise, stated_entities
from memory.knowledge import extraction as entities
from memory.knowledge.rules import rule_mentions, text_keys
from memory.lifecycle import memory_update
from memory.models import Entity, Memory, MemoryEntity
from memory.save import SaveResult, memory_save, memory_save_batch, memory_save_bulk
from memory.search import SearchRequest, memory_search
from palace import rls
from palace.actors import Actor
from palace.errors import InvalidInput
from palace.models import OpLog, Palace
from tests.fakes.openai_server import CHAT_PATH, FakeOpenAI, chat_json, http_error, slow

Save = Callable[..., SaveResult]


def names(text: str, **kwargs: Any) -> dict[str, str]:
    return {m.name: m.kind for m in rule_mentions(text, **kwargs)}


def links(memory: Memory | None) -> dict[str, str]:
    assert memory is not None
    return {
        link.entity.name: link.source for link in MemoryEntity.objects.filter(memory=memory).select_related("entity")
    }


# --- normalisation and rules ---------------------------------------------------------------------------------------


def test_normalise_folds_width_case_whitespace_and_end_punctuation() -> None:
    assert normalise("  “Caroline”. ") == "caroline"
    assert normalise("ＰｏｓｔｇｒｅＳＱＬ") == "postgresql"
    assert normalise("Golden   Gate\nBridge") == "golden gate bridge"
    assert normalise("Straße") == normalise("STRASSE") == "strasse"
    assert normalise("C++") == "c++" and normalise("@alice,") == "@alice"
    assert normalise("...") == ""


def test_rules_find_capitalised_names_but_not_sentence_initial_common_words() -> None:
    found = names(
        "Hey Caroline! Yesterday I went to the Golden Gate Bridge with Bank of America people. Dr. Smith said hi."
    )
    assert found["Caroline"] == "person"  # a given name (memory.knowledge.lexicon)
    assert found["Golden Gate Bridge"] == "place"
    assert found["Bank of America"] == "other"
    assert found["Smith"] == "person"  # after a title
    assert not {"Hey", "Yesterday", "I"} & set(found)
    # A sentence-initial word is a name only when the text also writes it capitalised mid-sentence.
    assert "Painting" not in names("Painting is fun. I love painting!")
    assert "Paris" in names("Paris was lovely. We loved Paris in May.")
    assert names("I LOVE IT SO MUCH OMG") == {}  # shouting is not acronyms
    assert names("We met at the LGBTQ centre.")["LGBTQ"] == "other"
    assert names("Caroline said so.", people=frozenset({"caroline"}))["Caroline"] == "person"


def test_days_and_months_are_not_names_in_the_plural_either() -> None:
    found = names("Carol Smith moved the billing deploy to Fridays, and the review to Mondays in March.")
    assert "Carol Smith" in found  # the positive control: the person is found
    assert not {"Fridays", "Mondays", "March"} & set(found)


def test_rules_find_code_identifiers_packages_handles_and_repositories() -> None:
    found = names(
        "Run pip install httpx pydantic==2.1 and npm i @types/node react@18, then check memory_search, useState, "
        "PostgreSQL and memory.search in `settings.py`. Ping @alice (not bob@example.com) about "
        "https://github.com/snap-research/locomo and atrium-team/atrium; and/or client/server 3/4 it.The end"
    )
    for tool in ("httpx", "pydantic", "@types/node", "react", "useState", "PostgreSQL"):
        assert found[tool] == "tool", tool
    assert "memory_search" not in found  # a snake_case word is a variable or a setting unless marked as code
    assert names("call `memory_search` first")["memory_search"] == "tool"
    assert found["memory.search"] == "tool" and found["settings.py"] == "tool"
    assert found["@alice"] == "person"
    assert found["snap-research/locomo"] == "project" and found["atrium-team/atrium"] == "project"
    for wrong in ("and", "and/or", "client/server", "3/4", "example.com", "it.The", "github.com"):
        assert wrong not in found, wrong


def test_rules_find_chinese_names_by_surname_and_boundary() -> None:
    found = names("王小明说明天和李雷一起去北京。王总同意了，老王也来。一张纸。黄色的花。这周很忙。")
    assert {"王小明", "李雷", "王总", "老王"} <= set(found)
    assert all(kind == "person" for name, kind in found.items() if name != "北京") and found["北京"] == "place"
    assert not {"王小", "张纸", "黄色", "周很"} & set(found)  # a prefix, a measure word, a colour, a week


def test_text_keys_are_normalised_ngrams_without_common_single_words() -> None:
    keys = text_keys("What did Caroline's friend see at the Golden Gate Bridge? 王小明负责")
    assert {"caroline", "golden gate bridge", "gate bridge", "王小明"} <= set(keys)
    assert "the" not in keys and "what" not in keys


# --- resolution ----------------------------------------------------------------------------------------------------


def test_a_known_name_reuses_its_entity_and_stamps_last_mentioned(save: Save, alice_palace: Palace) -> None:
    then = timezone.now() - timedelta(days=3)
    first = save("We met Caroline at the Golden Gate Bridge last weekend.", now=then)
    caroline = Entity.objects.get(palace=alice_palace, key="caroline")
    assert caroline.last_mentioned_at == then and caroline.created_at == then
    assert links(first.memory) == {"Caroline": "rules", "Golden Gate Bridge": "rules"}
    assert first.entities is not None and first.entities.by == "rules" and first.entities.fallback == ""
    assert sorted(first.entities.created) == sorted(first.entities.detail()["linked"])

    later = timezone.now()
    second = save("Caroline is planning a pottery class for the autumn term.", now=later)
    assert Entity.objects.filter(palace=alice_palace, key="caroline").count() == 1  # reused, not duplicated
    caroline.refresh_from_db()
    assert caroline.last_mentioned_at == later
    assert second.entities is not None and second.entities.created == []
    assert links(second.memory) == {"Caroline": "rules"}  # sentence-initial, found as a known name
    op = OpLog.objects.get(op="memory.save", target_id=second.memory.pk)  # type: ignore[union-attr]
    assert op.detail["entities"] == {"by": "rules", "linked": [caroline.pk], "created": []}


def test_aliases_resolve_to_the_canonical_entity(save: Save, alice_palace: Palace) -> None:
    first = save(
        "Robert Lee owns the billing service.",
        entities=[{"name": "Robert Lee", "kind": "person", "aliases": ["Bob", "R. Lee"]}],
    )
    robert = Entity.objects.get(palace=alice_palace, key="robert lee")
    assert robert.kind == "person" and robert.aliases == ["Bob", "R. Lee"] and robert.alias_keys == ["bob", "r. lee"]
    assert links(first.memory)["Robert Lee"] == "agent"

    second = save("Bob fixed the flaky deploy job on Friday.")  # "Bob" only as an alias
    assert links(second.memory) == {"Robert Lee": "rules"}
    third = save("Need approval from them.", entities=[{"name": "bob"}])  # an agent naming the alias
    assert links(third.memory) == {"Robert Lee": "agent"}
    assert list(Entity.objects.filter(palace=alice_palace).values_list("key", flat=True)) == ["robert lee"]


def test_agent_stated_entities_are_linked_with_their_kind_and_label(save: Save, alice_palace: Palace) -> None:
    result = save(
        "the queue moved to a new broker this week",
        entities=[{"name": "Redis", "kind": "tool"}, {"name": "Queue Project", "kind": "project", "aliases": []}],
    )
    assert links(result.memory) == {"Redis": "agent", "Queue Project": "agent"}
    assert Entity.objects.get(palace=alice_palace, key="redis").kind == "tool"
    assert result.entities is not None
    assert {(t.name, t.kind, t.source) for t in result.entities.tags} == {
        ("Redis", "tool", "agent"),
        ("Queue Project", "project", "agent"),
    }
    # A later rule-found mention keeps the entity (and its kind); "other" is upgraded by a stated kind.
    save("Moved the cache to Kestrelcache as well.")  # a name no rule knows the kind of
    assert Entity.objects.get(palace=alice_palace, key="kestrelcache").kind == "other"
    save("Kestrelcache settings were tuned.", entities=[{"name": "Kestrelcache", "kind": "tool"}])
    assert Entity.objects.get(palace=alice_palace, key="kestrelcache").kind == "tool"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("Redis", "must be a list"),
        ([{"kind": "tool"}], "entities[0].name must be text"),
        ([{"name": "  ...  "}], "entities[0].name is empty"),
        ([{"name": "x" * 201}], "at most 200"),
        ([{"name": "Redis", "kind": "tool/service"}], "entities[0].kind is a short word"),
        ([{"name": "Redis", "aliases": "redis"}], "aliases must be a list"),
        ([{"name": "Redis", "colour": "red"}], "unknown fields: colour"),
        ([{"name": f"n{i}"} for i in range(21)], "at most 20 entities"),
        ([3], "must be an object"),
    ],
)
def test_stated_entities_are_validated_with_clear_errors(raw: Any, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        stated_entities(raw)
    assert message in caught.value.message
    assert caught.value.detail == {"field": "entities"}
    assert [m.name for m in stated_entities(["Redis", {"name": "Bob"}])] == ["Redis", "Bob"]  # positive control


def test_a_bad_stated_entity_refuses_the_save_before_anything_is_written(save: Save) -> None:
    with pytest.raises(InvalidInput):
        save("Bob owns billing.", entities=[{"name": ""}])
    assert Memory.objects.count() == 0
    assert save("Bob owns billing.", entities=[{"name": "Bob"}]).memory is not None


def test_a_failed_resolution_never_blocks_the_write(
    save: Save, alice_palace: Palace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(**kwargs: Any) -> Any:
        raise RuntimeError("lexicon unavailable")

    monkeypatch.setattr(linking, "_resolve", broken)
    result = save("We met Caroline at the Golden Gate Bridge.")
    assert result.disposition == "accept" and result.memory is not None
    assert result.entities is not None and "resolution failed: lexicon unavailable" in result.entities.error
    assert MemoryEntity.objects.count() == 0 and Entity.objects.count() == 0
    op = OpLog.objects.get(op="memory.save", target_id=result.memory.pk)
    assert "lexicon unavailable" in op.detail["entities"]["error"]

    monkeypatch.undo()
    monkeypatch.setattr(entities, "rule_mentions", lambda *a, **k: 1 / 0)  # the rules themselves fail
    again = save("Melanie painted a lake at sunrise.", entities=[{"name": "Melanie"}])
    assert again.memory is not None and again.entities is not None and again.entities.error
    monkeypatch.undo()
    assert links(again.memory) == {"Melanie": "agent"}  # the stated entity still counts
    ok = save("Caroline went hiking at Mount Hood.")  # positive control: linking works again
    assert ok.entities is not None and ok.entities.error == "" and "Mount Hood" in links(ok.memory)


def test_a_restatement_links_its_entities_to_the_existing_memory(save: Save) -> None:
    first = save("The billing server listens on port 8000.")
    again = save("The billing server runs on port 8000.", entities=[{"name": "billing server", "kind": "tool"}])
    assert again.disposition == "merge" and again.memory is not None and first.memory is not None
    assert again.memory.pk == first.memory.pk
    assert links(first.memory) == {"billing server": "agent"}
    op = OpLog.objects.get(op="memory.merge", target_id=first.memory.pk)
    assert op.detail["entities"]["linked"] == [Entity.objects.get(key="billing server").pk]


def test_a_correction_links_the_new_version(save: Save, alice_actor: Actor) -> None:
    first = save("The standup is with Caroline at nine.")
    assert first.memory is not None
    new = memory_update(memory_id=first.memory.pk, actor=alice_actor, content="The standup is with Melanie at ten.")
    assert "Melanie" in links(new)
    assert OpLog.objects.get(op="memory.update", target_id=new.pk).detail["entities"]["by"] == "rules"


# --- the model path --------------------------------------------------------------------------------------------------


@pytest.fixture
def model(settings: Any) -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        settings.ATRIUM_LLM_BASE_URL = server.base_url
        settings.ATRIUM_LLM_API_KEY = "sk-test"
        settings.ATRIUM_LLM_MODEL = "fake-model"
        settings.ATRIUM_ENTITIES_MODEL = True
        settings.ATRIUM_ENTITIES_TIMEOUT = 1.0
        yield server


def test_the_model_extracts_entities_and_the_links_say_so(save: Save, model: FakeOpenAI) -> None:
    model.script_chat(
        [
            chat_json(
                {
                    "notes": [
                        {
                            "id": 0,
                            "entities": [
                                {"name": "kafka", "kind": "tool", "aliases": []},
                                {"name": "Mel", "kind": "person", "aliases": ["Melanie"]},
                                {"name": "Atlantis", "kind": "place", "aliases": []},  # not in the text: dropped
                            ],
                        }
                    ]
                }
            )
        ]
    )
    result = save("mel wants the events on kafka by june")
    assert result.entities is not None and result.entities.by == "model" and result.entities.fallback == ""
    assert links(result.memory) == {"kafka": "model", "Mel": "model"}
    assert Entity.objects.get(key="mel").alias_keys == ["melanie"]
    assert not Entity.objects.filter(key="atlantis").exists()
    request = model.requests_to(CHAT_PATH)[0].json
    assert request["model"] == "fake-model" and "mel wants the events" in request["messages"][1]["content"]


@pytest.mark.parametrize(
    ("behaviour", "fallback"),
    [(http_error(500), "failed"), (chat_json({"nope": 1}), "failed"), (slow(3.0), "timeout")],
)
def test_a_failing_model_falls_back_to_the_rules_and_says_why(
    save: Save, model: FakeOpenAI, behaviour: Any, fallback: str
) -> None:
    model.script_chat([behaviour])
    result = save("We met Caroline at the Golden Gate Bridge.")
    assert result.memory is not None
    assert result.entities is not None and result.entities.by == "rules" and result.entities.fallback == fallback
    assert links(result.memory) == {"Caroline": "rules", "Golden Gate Bridge": "rules"}
    op = OpLog.objects.get(op="memory.save", target_id=result.memory.pk)
    assert op.detail["entities"]["fallback"] == fallback


def test_the_model_switch_and_no_model_mean_rules_without_a_call(save: Save, model: FakeOpenAI, settings: Any) -> None:
    settings.ATRIUM_ENTITIES_MODEL = False
    result = save("We met Caroline at the Golden Gate Bridge.")
    assert result.entities is not None and (result.entities.by, result.entities.fallback) == ("rules", "")
    settings.ATRIUM_ENTITIES_MODEL, settings.ATRIUM_LLM_MODEL = True, ""
    assert save("Melanie painted the lake at sunrise again.").entities.by == "rules"  # type: ignore[union-attr]
    assert model.requests_to(CHAT_PATH) == []


def _notes_reply(*entities_per_note: list[str]) -> Any:
    return chat_json(
        {
            "notes": [
                {"id": i, "entities": [{"name": n, "kind": "tool", "aliases": []} for n in names]}
                for i, names in enumerate(entities_per_note)
            ]
        }
    )


BATCH = [
    "We moved the queue to Kafka last spring.",
    "Grafana shows the queue depth per topic.",
    "The nightly job writes to Postgres replicas.",
    "Terraform manages the staging cluster now.",
    "Sentry pages the on-call person for errors.",
]


def test_a_batch_asks_the_model_once_for_all_its_items(
    alice_palace: Palace, alice_actor: Actor, model: FakeOpenAI
) -> None:
    model.script_chat([_notes_reply(["Kafka"], ["Grafana"], ["Postgres"], ["Terraform"], ["Sentry", "Kafka"])])
    result = memory_save_batch(
        palace=alice_palace, actor=alice_actor, items=[{"content": c, "kind": "fact"} for c in BATCH]
    )
    requests = model.requests_to(CHAT_PATH)
    assert len(requests) == 1  # one ask for five items
    sent = json.loads(requests[0].json["messages"][1]["content"])
    assert sent == {"notes": [{"id": i, "text": text} for i, text in enumerate(BATCH)]}
    saved = [r for r in result.items if isinstance(r, SaveResult)]
    assert len(saved) == 5 and all(r.entities is not None and r.entities.by == "model" for r in saved)
    # Each item gets its own note's names; "Kafka" listed for the fifth is not in its text, so it is dropped.
    assert [links(r.memory) for r in saved] == [
        {"Kafka": "model"}, {"Grafana": "model"}, {"Postgres": "model"}, {"Terraform": "model"}, {"Sentry": "model"}
    ]  # fmt: skip


def test_a_bulk_save_asks_once_per_ten_and_an_item_the_reply_leaves_out_gets_the_rules(
    alice_palace: Palace, alice_actor: Actor, model: FakeOpenAI
) -> None:
    items = [
        {"content": f"Server {i} in hall {i + 1} runs Zookeeper build {i * 7}.", "kind": "fact"} for i in range(12)
    ]
    first = chat_json({"notes": [{"id": i, "entities": []} for i in range(9)]})  # the tenth (id 9) is left out
    model.script_chat([first, _notes_reply(["Zookeeper"], ["Zookeeper"])])
    result = memory_save_bulk(palace=alice_palace, actor=alice_actor, items=items, source="capture")
    assert len(model.requests_to(CHAT_PATH)) == 2  # twelve items: two asks of up to ten
    by = [(r.entities.by, r.entities.fallback) for r in result.items if isinstance(r, SaveResult) and r.entities]
    assert by == [("model", "")] * 9 + [("rules", "failed")] + [("model", "")] * 2


def test_the_switch_turns_off_rules_and_model_alike(
    alice_palace: Palace, alice_actor: Actor, model: FakeOpenAI, settings: Any
) -> None:
    items = [{"content": c, "kind": "fact"} for c in BATCH[:3]]
    items[2] = {**items[2], "entities": [{"name": "Postgres", "kind": "tool"}]}  # stated by the agent

    settings.ATRIUM_ENTITIES = False
    off = memory_save_batch(palace=alice_palace, actor=alice_actor, items=items)
    single = memory_save(palace=alice_palace, actor=alice_actor, content="Melanie reviews Kafka changes.", kind="fact")
    correction = memory_update(memory_id=single.memory.pk, actor=alice_actor,  # type: ignore[union-attr]
                               content="Caroline reviews Kafka changes now.")  # fmt: skip
    assert model.requests_to(CHAT_PATH) == []  # the model is configured and on, and not asked
    off_results = [r for r in off.items if isinstance(r, SaveResult)]
    assert [(r.entities.by, links(r.memory)) for r in off_results if r.entities] == [
        ("off", {}), ("off", {}), ("off", {"Postgres": "agent"})  # no rule found Kafka or Grafana
    ]  # fmt: skip
    assert single.entities is not None and single.entities.by == "off" and links(single.memory) == {}
    assert links(correction) == {}
    assert OpLog.objects.get(op="memory.save", target_id=single.memory.pk).detail["entities"]["by"] == "off"  # type: ignore[union-attr]
    assert set(Entity.objects.values_list("name", flat=True)) == {"Postgres"}

    # The control: switched on, the rules find them (model off) ...
    settings.ATRIUM_ENTITIES, settings.ATRIUM_ENTITIES_MODEL = True, False
    ruled = memory_save(palace=alice_palace, actor=alice_actor, content="We reviewed the Grafana boards with Melanie.",
                        kind="fact")  # fmt: skip
    assert ruled.entities is not None and ruled.entities.by == "rules"
    assert links(ruled.memory) == {"Melanie": "rules", "Grafana": "rules"}
    # ... and the model is asked (model on).
    settings.ATRIUM_ENTITIES_MODEL = True
    model.script_chat([_notes_reply(["Terraform"])])
    asked = memory_save(palace=alice_palace, actor=alice_actor, content=BATCH[3], kind="fact")
    assert len(model.requests_to(CHAT_PATH)) == 1 and links(asked.memory) == {"Terraform": "model"}


# --- search ----------------------------------------------------------------------------------------------------------


def _search(user: Any, query: str, **kwargs: Any) -> Any:
    return memory_search(user=user, request=SearchRequest(query=query, **kwargs), reinforce=False, register_batch=False)


def test_hits_carry_entity_tags_and_a_named_entity_boost_is_labelled(alice: Any, save: Save) -> None:
    linked = save("Zephyrine reviewed the quarterly budget with the finance team.", entities=[{"name": "Zephyrine"}])
    other = save("The quarterly budget review moved to Thursday afternoon.")
    assert linked.memory is not None and other.memory is not None

    result = _search(alice, "What did Zephyrine say about the quarterly budget?")
    hits = {h.memory.pk: h for h in result.hits}
    assert {linked.memory.pk, other.memory.pk} <= set(hits)
    assert hits[linked.memory.pk].label.endswith("+ ent")
    assert [(t.name, t.source) for t in hits[linked.memory.pk].entities] == [("Zephyrine", "agent")]
    assert "ent" not in hits[other.memory.pk].label  # not linked: no cue
    plain = _search(alice, "the quarterly budget")  # the query names no entity: no cue, tags all the same
    assert all("ent" not in h.label for h in plain.hits)
    assert {t.name for h in plain.hits for t in h.entities} == {"Zephyrine"}


def test_an_alias_in_the_query_boosts_the_canonical_entity(alice: Any, save: Save) -> None:
    linked = save("Robert Lee approved the vendor contract.", entities=[{"name": "Robert Lee", "aliases": ["Bobby"]}])
    save("The vendor contract renewal is due in March.")
    result = _search(alice, "did Bobby approve the vendor contract?")
    hit = next(h for h in result.hits if h.memory.pk == linked.memory.pk)  # type: ignore[union-attr]
    assert "+ ent" in hit.label


def test_entities_never_cross_palaces(alice: Any, bob: Any, save: Save, alice_palace: Palace) -> None:
    bob_palace = Palace.objects.get(personal_owner=bob)
    mine = save("Zephyrine reviewed the quarterly budget with the finance team.", entities=["Zephyrine"])
    bobs = memory_save(
        palace=bob_palace,
        actor=Actor.for_user(bob),
        content="notes on the quarterly budget of zephyrine, reviewed with finance",
        kind="fact",
    )
    assert mine.memory is not None and bobs.memory is not None
    assert links(bobs.memory) == {}  # alice's lexicon is not bob's: the lower-case name links nothing there

    with rls.acting_as(bob):
        result = _search(bob, "What did Zephyrine say about the quarterly budget?")
        assert [h.memory.pk for h in result.hits] == [bobs.memory.pk]
        assert result.hits[0].entities == [] and "ent" not in result.hits[0].label
        assert entities_for_memories([mine.memory.pk]) == {}  # alice's links are invisible to bob
        assert entity_cues(palaces=[alice_palace.pk], query="Zephyrine", memory_ids=[mine.memory.pk]) == {}
    with rls.acting_as(alice):  # positive control
        result = _search(alice, "What did Zephyrine say about the quarterly budget?")
        assert result.hits[0].memory.pk == mine.memory.pk and result.hits[0].label.endswith("+ ent")
        assert [t.name for t in entities_for_memories([mine.memory.pk])[mine.memory.pk]] == ["Zephyrine"]
    # Even with RLS off, the cue is bound to the palaces searched.
    assert entity_cues(palaces=[bob_palace.pk], query="Zephyrine", memory_ids=[mine.memory.pk, bobs.memory.pk]) == {}
    assert set(entity_cues(palaces=[alice_palace.pk], query="Zephyrine", memory_ids=[mine.memory.pk])) == {
        mine.memory.pk
    }


def test_an_entity_most_memories_link_to_gives_no_cue(alice: Any, save: Save) -> None:
    """Like a common word: the palace's main person singles nothing out (more than FEW_LINKS links and more than
    ENTITY_MAX_SHARE of the memories); a rare entity in the same query still cues its memories."""
    topics = ["budget", "roadmap", "hiring", "offsite", "pricing", "security", "support", "billing"]
    for topic in topics:
        save(f"Caroline wrote the {topic} notes for the planning review.", entities=["Caroline"])
    rare = save("Zephyrine checked the pricing notes for the planning review.", entities=["Zephyrine"])
    assert Entity.objects.get(key="caroline").memory_links.count() > entities.FEW_LINKS  # some saves merge

    result = _search(alice, "Caroline and Zephyrine: the pricing notes for the planning review")
    labelled = {h.memory.pk: h.label for h in result.hits}
    assert labelled[rare.memory.pk].endswith("+ ent")  # type: ignore[union-attr]
    assert [pk for pk, label in labelled.items() if "ent" in label] == [rare.memory.pk]  # type: ignore[union-attr]
    assert all(any(t.name == "Caroline" for t in h.entities) for h in result.hits if h.memory.pk != rare.memory.pk)  # type: ignore[union-attr]


def test_the_speaker_is_linked_but_left_to_the_speaker_cue(alice: Any, save: Save) -> None:
    said = save("I checked the pricing notes for the planning review.", speaker="Zephyrine", kind="episode")
    about = save("Ask Zephyrine about the pricing notes before the planning review.")
    assert links(said.memory) == {"Zephyrine": "rules"}  # what someone said is part of what we know about them
    assert links(about.memory) == {"Zephyrine": "rules"}

    result = _search(alice, "Zephyrine and the pricing notes for the planning review")
    labels = {h.memory.pk: h.label for h in result.hits}
    assert labels[about.memory.pk].endswith("+ ent")  # type: ignore[union-attr]
    assert "ent" not in labels[said.memory.pk]  # type: ignore[union-attr]


def test_a_known_chinese_name_is_found_where_the_rule_cannot_bound_it(save: Save, alice_palace: Palace) -> None:
    assert "张伟" not in names("下午和张伟聊预算的事")  # the rule needs a boundary (or a known verb) after the name
    save("张伟负责预算审核。", entities=[{"name": "张伟", "kind": "person", "aliases": ["阿伟"]}])
    later = save("下午和张伟聊预算的事")
    assert links(later.memory) == {"张伟": "rules"}  # a known name, by the ideograph n-grams of the text
    by_alias = save("阿伟说预算已经批了")
    assert links(by_alias.memory) == {"张伟": "rules"}
    assert Entity.objects.filter(palace=alice_palace).count() == 1
