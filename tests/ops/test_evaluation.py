"""`atrium eval` on a tiny hand-made dataset whose answers are known.

tests/ops/data/tiny.jsonl: one conversation, two sessions, six turns (D1:2 "ok thanks" is low-entropy and
dropped by the pipeline), five questions:

- q0 single-hop, the puppy's name -> D1:1, found first;
- q1 temporal, Ben's marathon -> D2:2, found first;
- q2 multi-hop, the chewed shoe (only in D2:1's image caption) and Ben's sister's bakery (D1:3): the question
  names Ben, so the speaker cue lifts Ben's marathon turn (D2:2) to first; the evidence follows at 2 and 3;
- q3 single-hop whose only evidence is the dropped turn: never retrievable, 0 everywhere (its session still ranks);
- q4 adversarial (Ben has no puppy; evidence D1:1, Ana's): reported apart, not in the headline.
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
from ops.evaluation import load_dataset, parse_session_time, score_question, turn_content
from palace.models import OpLog, Palace

TINY = Path(__file__).parent / "data" / "tiny.jsonl"


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
        "recall@1": 0.5,  # (1 + 1 + 0 + 0) / 4
        "recall@3": 0.75,  # (1 + 1 + 1 + 0) / 4
        "any_hit@1": 0.5,
        "any_hit@3": 0.75,
        "mrr": 0.625,  # (1 + 1 + 1/2 + 0) / 4
        "session_any_hit@10": 1.0,
    }
    assert report["by_category"]["multi-hop"] == {
        "n": 1,
        "recall@1": 0.0,
        "recall@3": 1.0,
        "any_hit@1": 0.0,
        "any_hit@3": 1.0,
        "mrr": 0.5,
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
def test_eval_never_reads_answers_evidence_or_categories_before_scoring(tmp_path: Path) -> None:
    """Blank out everything but turns and question texts: ingest and search must behave the same."""
    original = load_dataset(TINY)
    blind = json.loads(json.dumps(original))
    for question in blind[0]["questions"]:
        question["answer"] = "?"
    from ops import evaluation

    seen: list[list[str]] = []
    real_search = evaluation._search

    def spy(**kwargs: Any) -> list[list[str]]:
        rankings = real_search(**kwargs)
        seen.append([",".join(r) for r in rankings][0:5])
        return rankings

    evaluation._search = spy
    try:
        evaluation.evaluate_dataset(conversations=original, ks=(3,))
        evaluation.evaluate_dataset(conversations=blind, ks=(3,))
    finally:
        evaluation._search = real_search
    assert seen[0] == seen[1]


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
