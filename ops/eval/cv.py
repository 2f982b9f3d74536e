"""`atrium eval --cv`: leave-one-conversation-out cross-validation of the ranking's tuned constants.

Each conversation is ingested once (ops.eval.retrieval.run_variants) and every question is asked once per
*variant*: the constants as shipped, then each tuned constant (memory.search.TUNABLE) moved alone to each of its
other grid values (the dialogue-only ones only when the dataset's queries are dialogues). Per variant and question
the metrics are kept. Then, for each conversation (a fold):

- the variant is **chosen on the other folds** only (the best mean of Recall@10 and MRR over their category 1-4
  questions; ties keep the earlier variant, so the shipped values win a tie), and
- **scored on the held-out fold**.

The cross-validated figure is the micro-average of the held-out scores, beside the in-sample figures: the shipped
values on all folds, and the variant that is best on all folds scored on the same folds (the optimistic number a
tuning run reports). A constant whose chosen value changes from fold to fold, or a CV figure well below the
in-sample one, says the value fits the data it was tuned on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.search import dialogue_turns, ranking_constants
from ops.eval.datasets import Conversation
from ops.eval.retrieval import HEADLINE_CATEGORIES, run_variants, score_conversation, use_cache

__all__ = ["DEFAULT_GRID", "CrossValidation", "cross_validate", "evaluate_cv", "variants_of"]

# The values each constant is tried at (the shipped value is always tried too).
DEFAULT_GRID: dict[str, tuple[float, ...]] = {
    "SEMANTIC_WEIGHT": (0.45, 0.55, 0.65),
    "DIALOGUE_SEMANTIC_WEIGHT": (0.55, 0.7, 0.85),
    "TAIL_TURNS": (0, 3, 4, 6),
    "FUSION_ADAPT": (0.0, 0.2, 0.4),
    "FLOOR_MARGIN": (0.04, 0.06, 0.08),
    "SPEAKER_CUE": (0.1, 0.2, 0.3),
    "ENTITY_CUE": (0.0, 0.1, 0.2),
    "EPISODE_SHARE": (0.1, 0.2, 0.3),
}
# Constants that only act on a query that is a dialogue: on a dataset without one they are not tried (every value
# would rank exactly as shipped).
DIALOGUE_ONLY = frozenset({"DIALOGUE_SEMANTIC_WEIGHT", "TAIL_TURNS", "TAIL_CHARS", "VIEW_MIX", "LEX_TAIL_TURNS"})
OBJECTIVE_K = 10

# Per variant (index), per conversation id, the metrics of each category 1-4 question.
Scores = dict[int, dict[str, list[dict[str, float]]]]


def variants_of(grid: dict[str, tuple[float, ...]]) -> list[dict[str, float]]:
    """The shipped constants ({}), then one constant at a time at each other grid value."""
    shipped = ranking_constants()
    variants: list[dict[str, float]] = [{}]
    for name, values in grid.items():
        if name not in shipped:
            raise ValueError(f"not a tuned constant: {name} (known: {', '.join(shipped)})")
        variants += [{name: v} for v in values if abs(float(v) - shipped[name]) > 1e-9]  # a count stays an int
    return variants


def _objective(metrics: list[dict[str, float]]) -> float:
    if not metrics:
        return 0.0
    return sum(m[f"recall@{OBJECTIVE_K}"] + m["mrr"] for m in metrics) / (2 * len(metrics))


def _mean(metrics: list[dict[str, float]], key: str) -> float:
    return round(sum(m[key] for m in metrics) / len(metrics), 4) if metrics else 0.0


def _figures(metrics: list[dict[str, float]]) -> dict[str, float | int]:
    return {
        "n": len(metrics),
        f"recall@{OBJECTIVE_K}": _mean(metrics, f"recall@{OBJECTIVE_K}"),
        "mrr": _mean(metrics, "mrr"),
    }


def _best(scores: Scores, folds: list[str]) -> int:
    """The variant with the best objective over the questions of `folds` (the earliest on a tie)."""
    best, best_value = 0, float("-inf")
    for variant in sorted(scores):
        value = _objective([m for fold in folds for m in scores[variant][fold]])
        if value > best_value + 1e-12:
            best, best_value = variant, value
    return best


@dataclass
class CrossValidation:
    variants: list[dict[str, float]]
    shipped: dict[str, float | int]  # in-sample, the constants as shipped
    best_in_sample: dict[str, Any]  # in-sample, the variant best on all folds
    cross_validated: dict[str, float | int]  # held-out folds, each scored with the variant chosen on the others
    folds: list[dict[str, Any]]  # per held-out fold: the variant chosen on the others and its held-out figures

    def as_dict(self) -> dict[str, Any]:
        return {
            "in_sample_shipped": self.shipped,
            "in_sample_best": self.best_in_sample,
            "cross_validated": self.cross_validated,
            "folds": self.folds,
            "variants": len(self.variants),
            "protocol": (
                "leave-one-conversation-out: per fold the variant of the tuned constants with the best mean of "
                f"Recall@{OBJECTIVE_K} and MRR on the other folds (categories 1-4; ties keep the shipped values) "
                "is scored on the held-out fold; cross_validated is the micro-average of the held-out scores"
            ),
        }


def cross_validate(scores: Scores, variants: list[dict[str, float]]) -> CrossValidation:
    """Leave-one-fold-out over per-question scores; the held-out fold's scores never enter its own choice."""
    folds = sorted(scores[0])
    held: list[dict[str, float]] = []
    per_fold = []
    for fold in folds:
        chosen = _best(scores, [f for f in folds if f != fold])
        held += scores[chosen][fold]
        per_fold.append({"fold": fold, "chosen": variants[chosen] or "shipped", **_figures(scores[chosen][fold])})
    best = _best(scores, folds)
    everything = [m for fold in folds for m in scores[best][fold]]
    return CrossValidation(
        variants=variants,
        shipped=_figures([m for fold in folds for m in scores[0][fold]]),
        best_in_sample={"variant": variants[best] or "shipped", **_figures(everything)},
        cross_validated=_figures(held),
        folds=per_fold,
    )


def evaluate_cv(
    *,
    conversations: list[Conversation],
    grid: dict[str, tuple[float, ...]] | None = None,
    embedding_cache: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> CrossValidation:
    """Run every variant over every conversation through the real pipeline and search, then cross-validate."""
    if len(conversations) < 2:
        raise ValueError("cross-validation needs at least two conversations (one is held out at a time)")
    say = progress or (lambda _line: None)
    grid = dict(DEFAULT_GRID if grid is None else grid)
    if not any(dialogue_turns(q.text) for conv in conversations for q in conv.questions):
        grid = {name: values for name, values in grid.items() if name not in DIALOGUE_ONLY}
    variants = variants_of(grid)
    scores: Scores = {v: {} for v in range(len(variants))}
    ks = (OBJECTIVE_K,)
    with ExitStack() as stack:
        use_cache(stack, embedding_cache)
        for conv in conversations:
            runs = run_variants(
                conv=conv,
                method="atrium",
                variants=variants,
                dispositions=Counter(),
                modes=Counter(),
                timing=[0.0, 0.0],
            )
            for v, rankings in enumerate(runs):
                scored = score_conversation(conv, rankings, ks)
                scores[v][conv.id] = [m for category, m in scored if category in HEADLINE_CATEGORIES]
            say(f"{conv.id}: {len(conv.questions)} questions x {len(variants)} variants")
    return cross_validate(scores, variants)
