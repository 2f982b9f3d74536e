"""`atrium eval` and `atrium judge-eval`: retrieval quality on LoCoMo-style datasets through the real write pipeline
and search (retrieval.py, with the datasets' format in datasets.py and the plain baselines in methods.py), its
leave-one-conversation-out cross-validation of the tuned ranking constants (cv.py), and the judge's dispositions on
a labelled set of pairs (judge.py); `atrium entity-eval`: entity extraction by rules on a labelled set of texts
(entities.py)."""

from __future__ import annotations

from ops.eval.cv import DEFAULT_GRID, CrossValidation, cross_validate, evaluate_cv
from ops.eval.datasets import DatasetError, load_dataset, parse_session_time, turn_content
from ops.eval.entities import DEFAULT_ENTITIES, EntitiesError, format_entity_report, load_entities, score_entities
from ops.eval.judge import (
    DEFAULT_PAIRS,
    Pair,
    PairsError,
    evaluate_pairs,
    fake_model,
    fixed,
    format_report,
    load_pairs,
    rules_only,
    similarities,
)
from ops.eval.methods import BASELINES, CachingEmbedder, Corpus
from ops.eval.retrieval import METHODS, SEARCH_DEPTH, SESSION_K, evaluate_dataset, score_question

__all__ = [
    "BASELINES",
    "DEFAULT_ENTITIES",
    "DEFAULT_GRID",
    "DEFAULT_PAIRS",
    "METHODS",
    "SEARCH_DEPTH",
    "SESSION_K",
    "CachingEmbedder",
    "Corpus",
    "CrossValidation",
    "DatasetError",
    "EntitiesError",
    "Pair",
    "PairsError",
    "cross_validate",
    "evaluate_cv",
    "evaluate_dataset",
    "evaluate_pairs",
    "fake_model",
    "fixed",
    "format_entity_report",
    "format_report",
    "load_dataset",
    "load_entities",
    "load_pairs",
    "parse_session_time",
    "rules_only",
    "score_entities",
    "score_question",
    "similarities",
    "turn_content",
]
