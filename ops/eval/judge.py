"""Measuring the judge on a labelled set of pairs (`atrium judge-eval`): for each pair an older memory and a newer
text, labelled `same` (a restatement), `contradiction` or `compatible` (alike, not in conflict).

Each pair goes through exactly what a save of the newer text next to the older one goes through: the pipeline's
cleaning and embedding text, the exact cosine of the two passage vectors, the rules (memory.judge.dispositions) and, on
their DEFER, the judge (memory.judge.rulings) — with the model path configured or not. No database is touched.

A pair is predicted `same` when the save would MERGE, `contradiction` when it would create a `contradicts` edge;
everything else (ACCEPT, or DEFER without an edge) predicts neither. Reported: precision and recall of both, the
dispositions, and how many pairs the model actually ruled on (the rest were decided by the rules before it).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from memory.judge import MERGE, JudgeConfig, Neighbour, judge_dispose
from memory.providers import embed_passages
from memory.save import SaveItem, derive_texts, prepare_item

LABELS = ("same", "contradiction", "compatible")
DEFAULT_PAIRS = Path(__file__).resolve().parents[2] / "tests" / "memory" / "data" / "judge_pairs.jsonl"


@dataclass(frozen=True)
class Pair:
    id: int
    label: str
    category: str
    kind: str
    old: str
    new: str
    fake_reply: dict[str, Any] = field(default_factory=dict)


class PairsError(ValueError):
    pass


def load_pairs(path: Path) -> list[Pair]:
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            pair = Pair(**raw)
        except (ValueError, TypeError) as exc:
            raise PairsError(f"{path}:{number}: {exc}") from exc
        if pair.label not in LABELS:
            raise PairsError(f"{path}:{number}: label must be one of {', '.join(LABELS)}")
        pairs.append(pair)
    return pairs


@dataclass
class Outcome:
    pair: Pair
    similarity: float
    disposition: str
    predicted: str  # same | contradiction | neither
    model_ruled: bool
    fallback: str
    reason: str


@dataclass
class Scores:
    path: str
    outcomes: list[Outcome]

    def _pr(self, label: str) -> dict[str, float | int | None]:
        tp = sum(o.predicted == label and o.pair.label == label for o in self.outcomes)
        predicted = sum(o.predicted == label for o in self.outcomes)
        actual = sum(o.pair.label == label for o in self.outcomes)
        return {
            "precision": round(tp / predicted, 3) if predicted else None,  # None: nothing predicted, unknown
            "recall": round(tp / actual, 3) if actual else None,
            "true_positives": tp,
            "predicted": predicted,
            "actual": actual,
        }

    def report(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "pairs": len(self.outcomes),
            "contradiction": self._pr("contradiction"),
            "same": self._pr("same"),
            "dispositions": dict(Counter(o.disposition for o in self.outcomes)),
            "model_ruled": sum(o.model_ruled for o in self.outcomes),
            "fallbacks": dict(Counter(o.fallback for o in self.outcomes if o.fallback)),
            "by_category": {
                cat: dict(Counter(o.predicted for o in self.outcomes if o.pair.category == cat))
                for cat in sorted({o.pair.category for o in self.outcomes})
            },
        }


def _texts(pair: Pair) -> tuple[str, str]:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    out = []
    for content in (pair.old, pair.new):
        prepared = prepare_item(SaveItem(content=content, kind=pair.kind), now=now)
        out.append(derive_texts(prepared, "")[1])
    return out[0], out[1]


def similarities(pairs: list[Pair]) -> list[float]:
    """The exact cosine the pipeline would see between each pair's two passage vectors (one embedder call)."""
    texts = [t for pair in pairs for t in _texts(pair)]
    vectors = np.asarray(embed_passages(texts), dtype=np.float64)
    return [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(pairs))]


JudgeFor = Callable[[Pair], AbstractContextManager[JudgeConfig]]


def evaluate_pairs(pairs: list[Pair], *, path: str, judge_for: JudgeFor, sims: list[float] | None = None) -> Scores:
    """Rule on every pair with the judge `judge_for(pair)` gives (a context: a fake server may live per pair)."""
    sims = sims if sims is not None else similarities(pairs)
    outcomes = []
    for pair, sim in zip(pairs, sims, strict=True):
        neighbour = Neighbour(id=pair.id, kind=pair.kind, content=pair.old, placard="", similarity=sim)
        with judge_for(pair) as config:
            judged = judge_dispose(content=pair.new, kind=pair.kind, speaker="", neighbours=[neighbour], config=config)
        d = judged.disposition
        predicted = "same" if d.disposition == MERGE else "contradiction" if d.contradicts else "neither"
        ruling = judged.rulings[0] if judged.rulings else None
        outcomes.append(
            Outcome(
                pair=pair,
                similarity=round(sim, 4),
                disposition=d.disposition,
                predicted=predicted,
                model_ruled=bool(ruling and ruling.model_took_part),
                fallback=ruling.fallback_reason if ruling else "",
                reason=ruling.reason if ruling else "",
            )
        )
    return Scores(path=path, outcomes=outcomes)


class _Fixed(AbstractContextManager[JudgeConfig]):
    def __init__(self, config: JudgeConfig) -> None:
        self.config = config

    def __enter__(self) -> JudgeConfig:
        return self.config

    def __exit__(self, *exc: object) -> None:
        return None


def rules_only(pair: Pair) -> AbstractContextManager[JudgeConfig]:
    return _Fixed(JudgeConfig(llm=None, off_reason="off", timeout_ms=3000))


def fixed(config: JudgeConfig) -> JudgeFor:
    return lambda pair: _Fixed(config)


def fake_model(timeout_ms: int = 3000) -> JudgeFor:
    """The model path against the fake OpenAI-compatible server (tests/fakes/openai_server.py), a fresh server per
    pair scripted with that pair's hand-written `fake_reply` (what a capable model answers, a few deliberately
    wrong or unsure). It measures the plumbing and the thresholds, not a model; say so when reporting it."""
    import contextlib

    from memory.providers import LLMConfig
    from tests.fakes.openai_server import FakeOpenAI, chat_json

    @contextlib.contextmanager
    def judge_for(pair: Pair) -> Iterator[JudgeConfig]:
        with FakeOpenAI() as server:
            server.script_chat([chat_json(pair.fake_reply)])
            llm = LLMConfig(base_url=server.base_url, api_key="fake", model="fake-judge", timeout_s=timeout_ms / 1000)
            yield JudgeConfig(llm=llm, off_reason="", timeout_ms=timeout_ms)

    return judge_for


def format_report(report: dict[str, Any]) -> str:
    def pr(name: str) -> str:
        s = report[name]
        fmt = lambda v: "unknown" if v is None else f"{v:.3f}"  # noqa: E731
        return (
            f"  {name:<13} precision {fmt(s['precision'])}  recall {fmt(s['recall'])}  "
            f"({s['true_positives']} right of {s['predicted']} predicted, {s['actual']} labelled)"
        )

    lines = [
        f"{report['path']} — {report['pairs']} pairs, the model ruled on {report['model_ruled']}",
        pr("contradiction"),
        pr("same"),
        "  dispositions: " + ", ".join(f"{k} {v}" for k, v in sorted(report["dispositions"].items())),
    ]
    if report["fallbacks"]:
        lines.append("  decided by the rules because: " + ", ".join(f"{k} {v}" for k, v in report["fallbacks"].items()))
    return "\n".join(lines)
