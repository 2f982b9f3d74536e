"""The judge's labelled set and its measurement (ops.eval.judge, `atrium judge-eval`)."""

from __future__ import annotations

import json
from collections import Counter
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command

from memory.judge import dispositions
from ops.eval import DEFAULT_PAIRS, Pair, evaluate_pairs, fake_model, load_pairs, rules_only, similarities


@pytest.fixture(scope="module")
def pairs_and_sims() -> tuple[list[Pair], list[float]]:
    pairs = load_pairs(DEFAULT_PAIRS)
    return pairs, similarities(pairs)


def test_the_set_has_60_pairs_of_every_label_and_kind_of_contradiction(
    pairs_and_sims: tuple[list[Pair], list[float]],
) -> None:
    pairs, _ = pairs_and_sims
    assert len(pairs) >= 60 and len({p.id for p in pairs}) == len(pairs)
    labels = Counter(p.label for p in pairs)
    assert labels["same"] >= 15 and labels["contradiction"] >= 15 and labels["compatible"] >= 15
    kinds = {p.category for p in pairs if p.label == "contradiction"}
    assert {"number", "date", "negation", "preference"} <= kinds
    assert all(set(p.fake_reply) == {"same", "contradicts", "reason"} for p in pairs)


def test_without_a_model_every_pair_gets_exactly_the_rules_disposition(
    pairs_and_sims: tuple[list[Pair], list[float]],
) -> None:
    pairs, sims = pairs_and_sims
    scores = evaluate_pairs(pairs, path="rules", judge_for=rules_only, sims=sims)
    for outcome, pair, sim in zip(scores.outcomes, pairs, sims, strict=True):
        neighbour = dispositions.Neighbour(id=pair.id, kind=pair.kind, content=pair.old, placard="", similarity=sim)
        expected = dispositions.dispose(
            content=pair.new,
            kind=pair.kind,
            neighbours=[neighbour],
            merge_similarity=settings.ATRIUM_MERGE_SIMILARITY,
            contradiction_similarity=settings.ATRIUM_CONTRADICTION_SIMILARITY,
            quantity_similarity=None if pair.kind == "episode" else settings.ATRIUM_JUDGE_SIMILARITY,
        )
        assert outcome.disposition == expected.disposition, pair
        assert not outcome.model_ruled
    report = scores.report()
    assert report["model_ruled"] == 0 and report["contradiction"]["actual"] == 24


def test_the_model_path_is_measured_through_the_fake_server(pairs_and_sims: tuple[list[Pair], list[float]]) -> None:
    pairs, sims = pairs_and_sims
    rules = evaluate_pairs(pairs, path="rules", judge_for=rules_only, sims=sims).report()
    model = evaluate_pairs(pairs, path="fake", judge_for=fake_model(), sims=sims).report()
    assert model["model_ruled"] > rules["dispositions"].get("defer", 0)
    assert model["fallbacks"] == {}  # every ruling came from the (fake) model
    for report in (rules, model):
        for name in ("contradiction", "same"):
            assert 0 <= report[name]["precision"] <= 1 and 0 <= report[name]["recall"] <= 1
    # The scripted replies include deliberate misses and a false alarm, so the model path is not perfect.
    assert model["contradiction"]["recall"] < 1 and model["contradiction"]["precision"] < 1


def test_the_command_prints_both_paths_as_json() -> None:
    out = StringIO()
    call_command("judge_eval", "--fake", "--json", stdout=out)
    reports = json.loads(out.getvalue())
    assert [r["path"] for r in reports] == ["rules", "model (fake server, scripted)"]
    assert reports[0]["pairs"] == reports[1]["pairs"] >= 60
