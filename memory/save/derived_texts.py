"""What a save derives from its cleaned text before it is disposed: the full-text search text and the embedding
text (with the previous turn of the same session as context), and the vectors of the latter. Corrections derive
theirs the same way."""

from __future__ import annotations

import logging
from typing import Any

from memory.providers import EmbedderUnavailable, embed_passages
from memory.save.input import Prepared
from memory.text import build_embedding_text, build_search_text

log = logging.getLogger(__name__)


def embed_texts(texts: list[str]) -> tuple[list[list[float] | None], list[str]]:
    """Vectors for `texts`, or Nones and the degraded marker when the embedder cannot run."""
    try:
        vectors = embed_passages(texts)
    except EmbedderUnavailable as exc:
        log.warning("saving without embeddings: %s", exc)
        return [None] * len(texts), ["embedder"]
    return [v.tolist() for v in vectors], []


def derive_texts(p: Prepared, context: str) -> tuple[str, str]:
    """The full-text search text and the embedding text of a prepared item (`context`: the previous turn)."""
    args: dict[str, Any] = {
        "content": p.content,
        "placard": p.placard,
        "speaker": p.speaker,
        "occurred_at": p.occurred_at,
        "context": context,
    }
    return build_search_text(**args), build_embedding_text(**args)
