"""Atrium's fusion never falls below its best plain arm (issue 27), on a subsample of each dev set: BM25 alone
(`--method bm25`) and e5 alone with the query verbatim (`--method dense`) over the same stored memories.

Unit tier: one conversation of the Chinese dialogue set (bench/zh-dialogue-dev.jsonl, in the repository), and the
first sessions of one LoCoMo conversation as facts and as transcripts (shared/bench, CC BY-NC, kept outside the
repository: skipped when absent). The full sets are measured with `atrium eval` (README, "Retrieval quality").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ops.eval import evaluate_dataset, load_dataset

ROOT = Path(__file__).parents[3]
ZH = ROOT / "bench" / "zh-dialogue-dev.jsonl"
# The shared bench folder beside the repository (../shared/bench), or beside the folder of a worktree clone.
SHARED = next(
    (p for p in (ROOT.parent / "shared" / "bench", ROOT.parent.parent / "shared" / "bench") if p.exists()),
    ROOT / "missing",
)
EPSILON = 0.02


def _locomo_subsample(tmp_path: Path, name: str, sessions: int) -> Path:
    source = SHARED / name
    if not source.exists():
        pytest.skip(f"{source} is not on this machine (LoCoMo is kept outside the repository)")
    conv: dict[str, Any] = json.loads(source.read_text(encoding="utf-8").splitlines()[1])
    if "turns" in conv:
        conv["turns"] = [t for t in conv["turns"] if int(t["session"]) <= sessions]
        kept = {t["id"] for t in conv["turns"]}
    else:
        conv["memories"] = [
            m for m in conv["memories"] if all(int(e[1:].split(":")[0]) <= sessions for e in m["evidence"])
        ]
        kept = {e for m in conv["memories"] for e in m["evidence"]}
    conv["questions"] = [q for q in conv["questions"] if q["evidence"] and set(q["evidence"]) <= kept]
    path = tmp_path / name
    path.write_text(json.dumps(conv) + "\n", encoding="utf-8")
    return path


def _zh(tmp_path: Path) -> Path:
    path = tmp_path / "zh.jsonl"
    path.write_text(ZH.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    return path


@pytest.mark.django_db
@pytest.mark.parametrize("subsample", ["zh-dialogue", "locomo-facts", "locomo-transcripts"])
def test_atrium_is_at_least_its_best_plain_arm(tmp_path: Path, subsample: str) -> None:
    path = {
        "zh-dialogue": lambda: _zh(tmp_path),
        "locomo-facts": lambda: _locomo_subsample(tmp_path, "locomo-facts-dev.jsonl", 6),
        "locomo-transcripts": lambda: _locomo_subsample(tmp_path, "locomo-dev.jsonl", 3),
    }[subsample]()
    conversations = load_dataset(path)

    figures = {
        method: evaluate_dataset(conversations=conversations, ks=(10,), method=method).headline
        for method in ("atrium", "bm25", "dense")
    }

    assert figures["atrium"]["n"] >= 20  # enough questions to mean something
    for metric in ("recall@10", "mrr"):
        best_arm = max(float(figures[m][metric]) for m in ("bm25", "dense"))
        assert float(figures["atrium"][metric]) >= best_arm - EPSILON, (subsample, metric, figures)
