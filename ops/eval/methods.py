"""The plain retrieval methods `atrium eval --method` compares Atrium with, and the eval's embedding cache.

Harness code (it belongs with the eval command, in the ops app once that exists). The baselines rank the memories
the write pipeline stored in the throwaway palace (so drops and merges are the same as Atrium's), exactly and in
Python, reading nothing but each memory's content and stored vector:

- ``bm25``: Okapi BM25 (k1 = 1.2, b = 0.75) over lower-cased ``\\w+`` tokens of the content (CJK runs cut into
  2-grams first, as the full-text arm does; nothing else: no stemming, no stop words);
- ``dense``: cosine of the question's e5 query embedding (verbatim) with each stored passage embedding;
- ``rrf``: reciprocal rank fusion (k = 60) of the two.
"""

from __future__ import annotations

import hashlib
import math
import re
import sqlite3
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from memory.providers import embed_query
from memory.text import search_text_cjk

__all__ = ["BASELINES", "CachingEmbedder", "Corpus"]

BASELINES = ("bm25", "dense", "rrf")
BM25_K1 = 1.2
BM25_B = 0.75
RRF_K = 60
_TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(search_text_cjk(text))


class Corpus:
    """The stored memories of one palace, ranked by a plain method."""

    def __init__(self, rows: list[tuple[int, str, Any]]) -> None:
        self.ids = [int(r[0]) for r in rows]
        self.docs = [Counter(tokens(str(r[1]))) for r in rows]
        self.lengths = np.asarray([sum(d.values()) for d in self.docs], dtype=np.float64)
        self.average = float(self.lengths.mean()) if rows else 0.0
        frequency: Counter[str] = Counter()
        for doc in self.docs:
            frequency.update(doc.keys())
        n = len(rows)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in frequency.items()}
        have = [i for i, r in enumerate(rows) if r[2] is not None]
        self.vector_ids = [self.ids[i] for i in have]
        self.vectors = np.asarray([np.asarray(rows[i][2], dtype=np.float32) for i in have]).reshape(-1, 384)

    def bm25(self, query: str, depth: int) -> list[int]:
        words = set(tokens(query)) & self.idf.keys()
        scores = np.zeros(len(self.ids))
        for i, doc in enumerate(self.docs):
            norm = BM25_K1 * (1 - BM25_B + BM25_B * self.lengths[i] / (self.average or 1))
            scores[i] = sum(self.idf[w] * doc[w] * (BM25_K1 + 1) / (doc[w] + norm) for w in words if w in doc)
        order = sorted((i for i in range(len(self.ids)) if scores[i] > 0), key=lambda i: (-scores[i], -self.ids[i]))
        return [self.ids[i] for i in order[:depth]]

    def dense(self, query: str, depth: int) -> list[int]:
        if not self.vector_ids:
            return []
        similarity = self.vectors @ np.asarray(embed_query(query), dtype=np.float32)
        order = np.argsort(-similarity, kind="stable")[:depth]
        return [self.vector_ids[int(i)] for i in order]

    def rank(self, method: str, query: str, depth: int) -> list[int]:
        if method == "bm25":
            return self.bm25(query, depth)
        if method == "dense":
            return self.dense(query, depth)
        fused: dict[int, float] = {}
        for ranking in (self.bm25(query, len(self.ids)), self.dense(query, len(self.ids))):
            for rank, memory_id in enumerate(ranking, start=1):
                fused[memory_id] = fused.get(memory_id, 0.0) + 1.0 / (RRF_K + rank)
        return [m for m, _ in sorted(fused.items(), key=lambda kv: (-kv[1], -kv[0]))[:depth]]


class CachingEmbedder:
    """Wraps the process's embedder with an on-disk cache (SQLite) of vectors by model, side and text.

    The vectors are the embedder's own, so rankings are unchanged; a second eval of the same data skips the
    embedding (most of its ingest time). Hits and misses are reported, and the eval says its ingest time then
    excludes most embedding.
    """

    def __init__(self, inner: Any, path: str | Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    def _key(self, side: str, text: str) -> str:
        return hashlib.sha256(f"{self.name}\x1f{side}\x1f{text}".encode()).hexdigest()

    def _get(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for key, blob in self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):  # noqa: S608
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def _put(self, items: list[tuple[str, np.ndarray]]) -> None:
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items],
            )
            self._db.commit()

    def passages(self, texts: list[str]) -> np.ndarray:
        keys = [self._key("passage", t) for t in texts]
        found = self._get(keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            fresh = np.asarray(self.inner.passages([texts[i] for i in missing]), dtype=np.float32)
            self._put([(keys[i], fresh[j]) for j, i in enumerate(missing)])
            found.update({keys[i]: fresh[j] for j, i in enumerate(missing)})
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, 384), dtype=np.float32)

    def query(self, text: str) -> np.ndarray:
        key = self._key("query", text)
        found = self._get([key])
        if key in found:
            self.hits += 1
            return found[key]
        self.misses += 1
        vector = np.asarray(self.inner.query(text), dtype=np.float32)
        self._put([(key, vector)])
        return vector

    def close(self) -> None:
        with self._lock:
            self._db.close()
