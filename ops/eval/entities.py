"""Measuring entity extraction by rules on a labelled set (`atrium entity-eval`): texts in team-notes style, English
and Chinese, each with the entities a person finds in it (name and kind).

Each text goes through memory.knowledge.rule_mentions alone (what a save extracts with no model and an empty
lexicon; known names are matched on top of it in a palace). Scored per split (`dev`, the half rules are tuned on,
and `heldout`, never looked at while tuning) and overall, twice: by name and kind (a person found as `other` is
wrong) and by name only. Names are compared by their entity key (memory.knowledge.normalise). No database.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.knowledge import normalise, rule_mentions

DEFAULT_ENTITIES = Path(__file__).resolve().parents[2] / "tests/memory/knowledge/data/entities_labelled.json"
SPLITS = ("dev", "heldout")


class EntitiesError(ValueError):
    pass


@dataclass(frozen=True)
class LabelledText:
    id: int
    split: str
    text: str
    entities: tuple[tuple[str, str], ...]  # (name, kind)


def load_entities(path: Path) -> list[LabelledText]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        items = [
            LabelledText(
                id=int(item["id"]),
                split=str(item["split"]),
                text=str(item["text"]),
                entities=tuple((str(e["name"]), str(e["kind"])) for e in item["entities"]),
            )
            for item in raw["items"]
        ]
    except (ValueError, TypeError, KeyError) as exc:
        raise EntitiesError(f"{path}: {exc!r}") from exc
    bad = [i.id for i in items if i.split not in SPLITS]
    if bad:
        raise EntitiesError(f"{path}: split must be one of {', '.join(SPLITS)} (items {bad[:5]})")
    return items


def _counts(expected: set[Any], predicted: set[Any]) -> dict[str, int]:
    return {"expected": len(expected), "predicted": len(predicted), "correct": len(expected & predicted)}


def _rates(counts: dict[str, int]) -> dict[str, Any]:
    p = counts["correct"] / counts["predicted"] if counts["predicted"] else 1.0
    r = counts["correct"] / counts["expected"] if counts["expected"] else 1.0
    return {**counts, "precision": round(p, 3), "recall": round(r, 3)}


def score_entities(items: list[LabelledText]) -> dict[str, Any]:
    """{split: {"name_kind": {precision, recall, …}, "name": {…}, "wrong": [...], "missed": [...]}} for each split
    and "all"."""
    totals: dict[str, dict[str, dict[str, int]]] = {}
    wrong: dict[str, list[str]] = {}
    missed: dict[str, list[str]] = {}
    for item in items:
        expected = {(normalise(n), k) for n, k in item.entities}
        predicted = {(normalise(m.name), m.kind) for m in rule_mentions(item.text)}
        by_name = (
            {n for n, _ in expected},
            {n for n, _ in predicted},
        )
        for split in (item.split, "all"):
            split_totals = totals.setdefault(split, {})
            for label, (exp, pred) in (("name_kind", (expected, predicted)), ("name", by_name)):
                into = split_totals.setdefault(label, {"expected": 0, "predicted": 0, "correct": 0})
                for key, value in _counts(exp, pred).items():
                    into[key] += value
        if item.split == "dev":  # the held-out half's mistakes are not shown: nothing is tuned on them
            wrong.setdefault(item.split, []).extend(f"#{item.id} {n} [{k}]" for n, k in sorted(predicted - expected))
            missed.setdefault(item.split, []).extend(f"#{item.id} {n} [{k}]" for n, k in sorted(expected - predicted))
    return {
        split: {
            "name_kind": _rates(totals[split]["name_kind"]),
            "name": _rates(totals[split]["name"]),
            "wrong": wrong.get(split, []),
            "missed": missed.get(split, []),
        }
        for split in (*SPLITS, "all")
        if split in totals
    }


def format_entity_report(report: dict[str, Any], *, details: bool = False) -> str:
    lines = ["entity extraction by rules (memory.knowledge.rule_mentions)"]
    for split, scores in report.items():
        nk, n = scores["name_kind"], scores["name"]
        lines.append(
            f"  {split:8} name+kind: precision {nk['precision']:.3f} recall {nk['recall']:.3f} "
            f"({nk['correct']}/{nk['predicted']} found, {nk['expected']} labelled) · name only: precision "
            f"{n['precision']:.3f} recall {n['recall']:.3f}"
        )
    if details and report.get("dev"):
        lines += ["  dev, found but not labelled so:", *(f"    {w}" for w in report["dev"]["wrong"])]
        lines += ["  dev, labelled but not found so:", *(f"    {m}" for m in report["dev"]["missed"])]
    return "\n".join(lines)
