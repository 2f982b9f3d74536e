"""`atrium eval` on tiny hand-made datasets whose answers are known.

tests/ops/data/tiny.jsonl: one conversation, two sessions, six turns (D1:2 "ok thanks" is low-entropy and
dropped by the pipeline), five questions:

- q0 single-hop, the puppy's name -> D1:1, found first;
- q1 temporal, Ben's marathon -> D2:2, found first;
- q2 multi-hop, the chewed shoe (only in D2:1's image caption) and Ben's sister's bakery (D1:3): Ben's bakery
  turn first (it shares the question's words, and the question names Ben, its speaker), both within the top 3;
- q3 single-hop whose only evidence is the dropped turn: never retrievable, 0 everywhere (its session still ranks);
- q4 adversarial (Ben has no puppy; evidence D1:1, Ana's): reported apart, not in the headline.

tests/memory/data/tiny-facts.jsonl: the same story as agent-written facts (ISO session times), six facts: o2 "ok
thanks" is dropped, o4 restates o1 and is merged into it (so the stored memory cites D1:1 and D1:4). Questions:

- q0 single-hop, the puppy's name -> o1 first;
- q1 temporal, the marathon -> o6 first;
- q2 multi-hop (D2:1 and D1:3): one relevant memory in the top 1, both in the top 3;
- q3 single-hop whose only evidence is the dropped fact: 0 everywhere;
- q4 single-hop whose evidence D1:4 only the merged restatement cites (D9:9 is cited by no fact and does not
  count): found through the memory o4 merged into, first;
- q5 adversarial: apart.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from memory.models import Memory
from ops.eval import DatasetError, load_dataset, parse_session_time, score_question, turn_content
from palace.models import OpLog, Palace

TINY = Path(__file__).parents[1] / "data" / "tiny.jsonl"
TINY_FACTS = Path(__file__).parents[1] / "data" / "tiny-facts.jsonl"


def test_scoring_follows_the_readme_worked_example() -> None:
    sessions = {t: t.split(":")[0] for t in ["D1:11", "D3:2", "D1:4", "D2:7", "D1:8", "D1:9"]}
    metrics = score_question(
        ranked_turns=["D1:11", "D3:2", "D1:4", "D2:7", "D1:8"],
        turn_session=sessions,
        evidence=["D1:9", "D1:11"],
        ks=(5,),
    )

    assert metrics == {"recall@5": 0.5, "any_hit@5": 1.0, "mrr": 1.0, "session_any_hit@10": 1.0}


def test_session_time_and_caption() -> None:
    assert parse_session_time("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"
    assert parse_session_time("2023-05-08").isoformat() == "2023-05-08T00:00:00+00:00"
    assert parse_session_time("2023-05-08T13:56:00Z").isoformat() == "2023-05-08T13:56:00+00:00"
    assert parse_session_time("2023-05-08 13:56").isoformat() == "2023-05-08T13:56:00+00:00"
    assert parse_session_time("2023-05-08T13:56:00+08:00").isoformat() == "2023-05-08T13:56:00+08:00"
    with pytest.raises(DatasetError, match="ISO 8601"):
        parse_session_time("last Tuesday")
    assert turn_content({"text": "Look!", "image_caption": "a dog"}) == "Look! [image: a dog]"
    assert turn_content({"text": "Plain"}) == "Plain"


@pytest.mark.django_db
def test_eval_on_the_tiny_dataset_gives_the_known_figures() -> None:
    users, palaces, memories, ops = (
        get_user_model().objects.count(),
        Palace.objects.count(),
        Memory.objects.count(),
        OpLog.objects.count(),
    )
    out, err = StringIO(), StringIO()

    call_command("eval", dataset=str(TINY), k="1,3", json=True, stdout=out, stderr=err)

    report = json.loads(out.getvalue())  # stdout is the JSON object alone; progress went to stderr
    assert "6 turns" in err.getvalue()
    assert report["headline"] == {
        "n": 4,
        "recall@1": 0.625,  # (1 + 1 + 1/2 + 0) / 4
        "recall@3": 0.75,  # (1 + 1 + 1 + 0) / 4
        "any_hit@1": 0.75,
        "any_hit@3": 0.75,
        "mrr": 0.75,  # (1 + 1 + 1 + 0) / 4
        "session_any_hit@10": 1.0,
    }
    assert report["by_category"]["multi-hop"] == {
        "n": 1,
        "recall@1": 0.5,
        "recall@3": 1.0,
        "any_hit@1": 1.0,
        "any_hit@3": 1.0,
        "mrr": 1.0,
        "session_any_hit@10": 1.0,
    }
    assert report["by_category"]["single-hop"]["n"] == 2
    assert report["by_category"]["single-hop"]["mrr"] == 0.5
    assert report["by_category"]["adversarial"]["n"] == 1
    assert set(report["by_category"]) == {"multi-hop", "temporal", "single-hop", "adversarial"}
    assert report["all_categories"]["n"] == 5
    assert report["dispositions"] == {"accept": 5, "drop": 1}
    assert report["search_modes"] == {"hybrid": 5}
    assert report["turns"] == 6
    assert report["ingest_seconds"] > 0 and report["query_seconds"] > 0
    # The throwaway user, palace, memories and op rows were rolled back.
    assert get_user_model().objects.count() == users
    assert Palace.objects.count() == palaces
    assert Memory.objects.count() == memories
    assert OpLog.objects.count() == ops


@pytest.mark.django_db
@pytest.mark.parametrize("dataset", [TINY, TINY_FACTS])
def test_eval_never_reads_answers_evidence_or_categories_before_scoring(tmp_path: Path, dataset: Path) -> None:
    """Blank the answers, every evidence list (questions' and facts') and the categories: ingest and search must
    return the same rankings; only the scores may change."""
    from ops.eval import retrieval as evaluation

    blind = tmp_path / "blind.jsonl"
    with blind.open("w") as out:
        for line in dataset.read_text().splitlines():
            conv = json.loads(line)
            for question in conv["questions"]:
                question.update(answer="?", evidence=[], category=0, category_name="?")
            for memory in conv.get("memories", []):
                memory["evidence"] = []
            out.write(json.dumps(conv) + "\n")

    seen: list[list[list[list[str]]]] = []
    real_run = evaluation._run_conversation

    def spy(**kwargs: Any) -> list[list[list[str]]]:
        rankings = real_run(**kwargs)
        seen.append(rankings)
        return rankings

    evaluation._run_conversation = spy  # type: ignore[assignment]
    try:
        sighted = evaluation.evaluate_dataset(conversations=load_dataset(dataset), ks=(3,))
        blinded = evaluation.evaluate_dataset(conversations=load_dataset(blind), ks=(3,))
    finally:
        evaluation._run_conversation = real_run  # type: ignore[assignment]
    assert seen[0] == seen[1]
    assert any(ranking for ranking in seen[0])  # positive control: there were rankings to compare
    assert sighted.headline["mrr"] > 0 and blinded.headline["n"] == 0  # the blinding reached the scoring


def test_human_table_output(db: Any) -> None:
    out = StringIO()
    call_command("eval", dataset=str(TINY), stdout=out, stderr=StringIO())

    text = out.getvalue()
    assert "categories 1-4" in text and "adversarial" in text and "session_any_hit@10" in text
    assert "[image: …]" in text


@pytest.mark.parametrize("k", ["0", "five", "", "5,99"])
def test_bad_k_is_refused(k: str) -> None:
    with pytest.raises(CommandError):
        call_command("eval", dataset=str(TINY), k=k)


def test_missing_or_malformed_dataset_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"conversation_id": "x"}\n')
    with pytest.raises(CommandError, match="needs conversation_id"):
        call_command("eval", dataset=str(bad))
    with pytest.raises(CommandError, match="cannot read"):
        call_command("eval", dataset=str(tmp_path / "nope.jsonl"))


@pytest.mark.django_db
def test_eval_on_tiny_facts_gives_the_known_figures() -> None:
    memories = Memory.objects.count()
    out = StringIO()

    call_command("eval", dataset=str(TINY_FACTS), k="1,3", json=True, stdout=out, stderr=StringIO())

    report = json.loads(out.getvalue())
    assert report["dataset"] == "facts" and report["method"] == "atrium"
    assert report["headline"] == {
        "n": 5,
        "recall@1": 0.7,  # (1 + 1 + 1/2 + 0 + 1) / 5
        "recall@3": 0.8,  # (1 + 1 + 1 + 0 + 1) / 5
        "any_hit@1": 0.8,
        "any_hit@3": 0.8,
        "mrr": 0.8,
        "session_any_hit@10": 1.0,
    }
    assert report["by_category"]["multi-hop"]["recall@1"] == 0.5
    assert report["by_category"]["single-hop"]["mrr"] == round(2 / 3, 4)
    assert report["dispositions"] == {"accept": 4, "drop": 1, "merge": 1}
    assert report["items"] == 6 and "turns" not in report
    assert "MCP memory_save of kind fact" in report["protocol"]["unit"]
    assert Memory.objects.count() == memories


@pytest.mark.django_db
def test_a_fact_is_saved_as_mcp_saves_it_at_its_session_time(monkeypatch: Any) -> None:
    """Content only, kind fact, the session time as the moment of saving; no speaker, session or turn."""
    from memory import save
    from ops.eval import retrieval as evaluation

    calls: list[dict[str, Any]] = []
    real_save = save.memory_save

    def spy(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return real_save(**kwargs)

    monkeypatch.setattr(save, "memory_save", spy)  # the face the eval saves through
    evaluation.evaluate_dataset(conversations=load_dataset(TINY_FACTS)[:1], ks=(1,))

    assert {frozenset(c) for c in calls} == {frozenset({"palace", "actor", "content", "kind", "source", "now"})}
    first = calls[0]
    assert first["kind"] == "fact" and first["content"] == "Ana adopted a border collie puppy named Biscuit."
    assert first["now"].isoformat() == "2024-03-03T10:00:00+00:00"
    assert calls[4]["now"].isoformat() == "2024-04-20T00:00:00+00:00"  # a bare ISO date


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["bm25", "dense", "rrf"])
def test_plain_baselines_run_through_the_same_harness(method: str) -> None:
    out = StringIO()

    call_command("eval", dataset=str(TINY_FACTS), k="1,3", method=method, json=True, stdout=out, stderr=StringIO())

    report = json.loads(out.getvalue())
    assert report["method"] == method
    assert report["search_modes"] == {method: 6}
    assert report["dispositions"] == {"accept": 4, "drop": 1, "merge": 1}  # the same stored memories
    assert report["headline"]["n"] == 5
    assert report["headline"]["any_hit@3"] == 0.8  # every answerable question is found by each plain method
    assert method in report["protocol"]["search"]


def test_bm25_baseline_ranks_rare_words_first_and_cjk_by_bigrams() -> None:
    import numpy as np

    from ops.eval import Corpus

    vector = np.zeros(384, dtype=np.float32)
    corpus = Corpus(
        [
            (1, "the cat sat on the mat", vector),
            (2, "the dog sat on the log", vector),
            (3, "a zebra ate the cat food", vector),
            (4, "小明喜欢喝乌龙茶", vector),
        ]
    )

    assert corpus.bm25("zebra cat", 10) == [3, 1]  # "zebra" is rarer than "cat"
    assert corpus.bm25("the", 10) == [2, 1, 3]  # same term frequency: the shorter document wins, then the id
    assert corpus.bm25("乌龙茶", 10) == [4]
    assert corpus.bm25("nothing here", 10) == []


@pytest.mark.django_db
def test_background_fills_other_palaces_and_removes_them(monkeypatch: Any) -> None:
    from ops.bench import load as benchmark

    palaces, memories = Palace.objects.count(), Memory.objects.count()
    sizes: list[int] = []
    real_load = benchmark._load

    def counting_load(**kwargs: Any) -> None:
        real_load(**kwargs)
        sizes.append(kwargs["count"])
        sizes.append(Memory.objects.count())

    monkeypatch.setattr(benchmark, "_load", counting_load)
    out = StringIO()
    call_command("eval", dataset=str(TINY), k="1,3", background=31, json=True, stdout=out, stderr=StringIO())

    report = json.loads(out.getvalue())
    assert report["background_memories"] == 31
    assert sizes[0::2] == [11, 10, 10]
    assert sizes[-1] == memories + 31  # all of them were in the table while the eval ran
    assert report["headline"]["n"] == 4
    assert Palace.objects.count() == palaces
    assert Memory.objects.count() == memories


@pytest.mark.django_db
def test_embedding_cache_gives_the_same_figures_without_embedding_again(tmp_path: Path) -> None:
    cache = tmp_path / "vectors.sqlite"
    first, second = StringIO(), StringIO()

    call_command("eval", dataset=str(TINY), k="1,3", json=True, embedding_cache=str(cache), stdout=first)
    call_command("eval", dataset=str(TINY), k="1,3", json=True, embedding_cache=str(cache), stdout=second)

    one, two = json.loads(first.getvalue()), json.loads(second.getvalue())
    assert one["embedding_cache"]["misses"] > 0
    assert two["embedding_cache"] == {"hits": one["embedding_cache"]["misses"], "misses": 0}
    assert one["headline"] == two["headline"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json\n", "line 1: not JSON"),
        ('{"conversation_id": "x", "questions": []}\n', "line 1: needs conversation_id, questions, and either"),
        ("[1, 2]\n", "line 1: a conversation must be a JSON object"),
        (
            '{"conversation_id": "x", "questions": [], "turns": [{"id": "D1:1", "session": 1, "text": "hi",'
            ' "session_time": "yesterday"}]}\n',
            "line 1 (x), turn 0 (D1:1): unparseable session_time 'yesterday'",
        ),
        (
            '{"conversation_id": "x", "questions": [], "memories": [{"id": "o1", "text": "hi",'
            ' "session_time": "2024-01-01", "evidence": "D1:1"}]}\n',
            "memory 0 (o1): `evidence` must be a list of turn ids",
        ),
        (
            '{"conversation_id": "x", "turns": [{"id": "D1:1", "session": 1, "text": "hi", "session_time":'
            ' "2024-01-01"}], "questions": [{"question": ""}]}\n',
            "question 0: `question` must be a non-empty string",
        ),
        (
            '{"conversation_id": "x", "turns": [{"id": "D1:1", "session": 1, "text": "hi", "session_time":'
            ' "2024-01-01"}], "questions": []}\n{"conversation_id": "y", "questions": [], "memories": [{"id": "o1",'
            ' "text": "hi", "session_time": "2024-01-01", "evidence": []}]}\n',
            "mixes transcripts (turns) and facts (memories)",
        ),
        ("\n", "holds no conversation"),
    ],
)
def test_every_dataset_error_is_one_line_naming_the_place(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)

    with pytest.raises(CommandError) as refused:
        call_command("eval", dataset=str(bad))

    text = str(refused.value)
    assert message in text
    assert "\n" not in text and "Traceback" not in text
    assert refused.value.__cause__ is None and refused.value.__suppress_context__


def test_a_file_that_is_not_utf8_is_refused_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes('{"conversation_id": "caf\xe9"}\n'.encode("latin-1"))

    with pytest.raises(CommandError, match="not UTF-8"):
        call_command("eval", dataset=str(bad))


ZH = Path(__file__).parents[1] / "data" / "zh-facts.jsonl"


@pytest.mark.django_db
def test_on_the_chinese_set_the_fusion_is_never_below_its_best_arm() -> None:
    """tests/ops/data/zh-facts.jsonl: 40 hand-written Chinese team facts, 40 questions (short ones, long
    conversational ones, mixed Chinese/English, English asked of Chinese memories). Atrium must rank at least as
    well as plain e5 and plain BM25 over the same stored memories (README, "Chinese")."""
    figures = {}
    for method in ("atrium", "dense", "bm25"):
        out = StringIO()
        call_command("eval", dataset=str(ZH), method=method, json=True, stdout=out, stderr=StringIO())
        figures[method] = json.loads(out.getvalue())["headline"]

    assert figures["atrium"]["n"] == 40
    for arm in ("dense", "bm25"):
        assert figures["atrium"]["recall@10"] >= figures[arm]["recall@10"]
        assert figures["atrium"]["mrr"] >= figures[arm]["mrr"]
