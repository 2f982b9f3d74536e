"""`atrium eval --cv`: leave-one-conversation-out over the tuned ranking constants (ops.eval.cv).

tests/ops/data/tiny-zh-dialogue.jsonl: three conversations (people), three dated records each, two dialogue queries
each whose last turns recall one record indirectly.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from memory.models import Memory
from memory.search import ranking_constants, tuned
from ops.eval import cross_validate, evaluate_cv, load_dataset

TINY_ZH = Path(__file__).parents[1] / "data" / "tiny-zh-dialogue.jsonl"


def _questions(value: float, n: int = 2) -> list[dict[str, float]]:
    return [{"recall@10": value, "mrr": value}] * n


def _scores() -> dict[int, dict[str, list[dict[str, float]]]]:
    """Variant 0 (shipped) is middling everywhere, variant 1 fits fold a only, variant 2 is a little better than
    shipped everywhere."""
    return {
        0: {"a": _questions(0.5), "b": _questions(0.5), "c": _questions(0.5)},
        1: {"a": _questions(1.0), "b": _questions(0.4), "c": _questions(0.4)},
        2: {"a": _questions(0.55), "b": _questions(0.55), "c": _questions(0.55)},
    }


VARIANTS: list[dict[str, float]] = [{}, {"SEMANTIC_WEIGHT": 0.9}, {"EPISODE_SHARE": 0.3}]


def test_the_cross_validated_figure_comes_from_held_out_folds_only() -> None:
    result = cross_validate(_scores(), VARIANTS)

    # In-sample, variant 1 looks best (0.6 against 0.55 and 0.5): it is tuned on the fold it is scored on.
    assert result.best_in_sample == {"variant": {"SEMANTIC_WEIGHT": 0.9}, "n": 6, "recall@10": 0.6, "mrr": 0.6}
    assert result.shipped == {"n": 6, "recall@10": 0.5, "mrr": 0.5}
    # Holding a out, the others choose variant 2 (0.55 > 0.5 > 0.4); holding b or c out, a's 1.0 pulls variant 1 in,
    # and it scores 0.4 on the held-out fold. (0.55 + 0.4 + 0.4) / 3 = 0.45: below the shipped values.
    assert [(f["fold"], f["chosen"], f["mrr"]) for f in result.folds] == [
        ("a", {"EPISODE_SHARE": 0.3}, 0.55),
        ("b", {"SEMANTIC_WEIGHT": 0.9}, 0.4),
        ("c", {"SEMANTIC_WEIGHT": 0.9}, 0.4),
    ]
    assert result.cross_validated == {"n": 6, "recall@10": 0.45, "mrr": 0.45}


def test_a_held_out_folds_scores_never_choose_its_variant() -> None:
    """Make variant 1 perfect on fold a: the in-sample choice follows; the choice for held-out a does not."""
    scores = _scores()
    scores[1]["a"] = _questions(5.0)  # absurd on purpose: any use of it in a's own choice would show

    result = cross_validate(scores, VARIANTS)

    assert result.best_in_sample["variant"] == {"SEMANTIC_WEIGHT": 0.9}  # positive control: the scores are read
    assert result.folds[0]["fold"] == "a" and result.folds[0]["chosen"] == {"EPISODE_SHARE": 0.3}
    assert result.folds[0]["mrr"] == 0.55


def test_a_tie_keeps_the_shipped_constants() -> None:
    scores = {0: {"a": _questions(0.5), "b": _questions(0.5)}, 1: {"a": _questions(0.5), "b": _questions(0.5)}}

    result = cross_validate(scores, [{}, {"SPEAKER_CUE": 0.3}])

    assert [f["chosen"] for f in result.folds] == ["shipped", "shipped"]


def test_tuned_overrides_and_restores_the_constants() -> None:
    shipped = ranking_constants()

    with tuned(SEMANTIC_WEIGHT=0.9, FLOOR_MARGIN=0.01):
        inside = ranking_constants()

    assert inside["SEMANTIC_WEIGHT"] == 0.9 and inside["FLOOR_MARGIN"] == 0.01
    assert ranking_constants() == shipped
    with pytest.raises(ValueError, match="not a tuned constant: NOPE"):
        with tuned(NOPE=1.0):
            pass


@pytest.mark.django_db
def test_cv_through_the_real_pipeline_reports_each_fold() -> None:
    memories = Memory.objects.count()
    seen: list[float] = []
    from ops.eval import retrieval

    real_search = retrieval._search

    def spy(**kwargs: Any) -> list[list[int]]:
        seen.append(ranking_constants()["SEMANTIC_WEIGHT"])
        return real_search(**kwargs)

    retrieval._search = spy  # type: ignore[assignment]
    try:
        result = evaluate_cv(conversations=load_dataset(TINY_ZH), grid={"SEMANTIC_WEIGHT": (0.3, 0.55, 0.8)})
    finally:
        retrieval._search = real_search  # type: ignore[assignment]

    # Shipped, then the two other values, per conversation: each variant really ran.
    assert seen == [0.55, 0.3, 0.8] * 3
    assert ranking_constants()["SEMANTIC_WEIGHT"] == 0.55
    assert len(result.variants) == 3
    assert [f["fold"] for f in result.folds] == ["p1", "p2", "p3"]
    assert result.cross_validated["n"] == 6 and result.shipped["n"] == 6
    assert result.shipped["mrr"] > 0  # the queries find their records
    assert Memory.objects.count() == memories  # rolled back


@pytest.mark.django_db
def test_the_command_prints_in_sample_and_cross_validated_figures() -> None:
    out = StringIO()

    call_command("eval", dataset=str(TINY_ZH), cv=True, json=True, stdout=out, stderr=StringIO())

    report = json.loads(out.getvalue())
    assert set(report) >= {"in_sample_shipped", "in_sample_best", "cross_validated", "folds", "protocol"}
    assert len(report["folds"]) == 3 and all("chosen" in f for f in report["folds"])
    assert "leave-one-conversation-out" in report["protocol"]
    table = StringIO()
    call_command("eval", dataset=str(TINY_ZH), cv=True, stdout=table, stderr=StringIO())
    assert "cross-validated (held-out folds)" in table.getvalue() and "held out p2" in table.getvalue()


def test_cv_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="plain --method has none"):
        call_command("eval", dataset=str(TINY_ZH), cv=True, method="bm25")
    one = tmp_path / "one.jsonl"
    one.write_text(TINY_ZH.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match="at least two conversations"):
        call_command("eval", dataset=str(one), cv=True)
