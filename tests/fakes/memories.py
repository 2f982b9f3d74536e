"""Test factories for the palace's keeping (slots, placards, corridor, review, jobs): memories created directly,
slotted exactly as the write pipeline slots them, with full control over time, vectors and status. Tests of every
app import it; it follows the models and the slotting it imitates.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
from django.db import transaction

from memory.models import Memory
from memory.providers import embed_passages
from memory.text import build_embedding_text, build_search_text
from palace.actors import Actor
from palace.models import Palace
from palace.slots import slot_assign

SYSTEM = Actor.for_system("tests")
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def make_memory(
    palace: Palace,
    content: str = "a memory",
    *,
    kind: str = "fact",
    placard: str = "",
    status: str = "active",
    importance: float = 0.5,
    confidence: float = 0.7,
    created_at: datetime | None = None,
    last_accessed_at: datetime | None = None,
    embedding: Any = None,
    review_enrolled: bool = False,
    supersedes: Memory | None = None,
    slotted: bool = True,
    source_kind: str = "rest",
    hit_count: int = 0,
) -> Memory:
    with transaction.atomic():
        slot = None
        if slotted:
            inherit = supersedes.slot if supersedes is not None else None
            slot = slot_assign(palace=palace, kind=kind, actor=SYSTEM, inherit=inherit)
        return Memory.objects.create(
            palace=palace,
            kind=kind,
            content=content,
            placard=placard,
            status=status,
            importance=importance,
            confidence=confidence,
            created_at=created_at or T0,
            occurred_at=created_at or T0,
            last_accessed_at=last_accessed_at,
            embedding=None if embedding is None else list(map(float, embedding)),
            embedding_model="test" if embedding is not None else "",
            review_enrolled=review_enrolled,
            supersedes=supersedes,
            slot=slot,
            source_kind=source_kind,
            hit_count=hit_count,
            search_text=build_search_text(content=content, placard=placard),
        )


def remember(
    palace: Palace,
    content: str,
    *,
    kind: str = "fact",
    speaker: str = "",
    occurred_at: datetime | None = None,
    status: str = "active",
    embed: bool = True,
    slot: bool = True,
) -> Memory:
    """A memory inserted directly, its search text and (with `embed`) its vector from the running embedder built
    exactly as the write pipeline builds them, so a search test pins retrieval alone."""
    occurred = occurred_at or datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    fields: dict[str, Any] = {
        "content": content,
        "placard": "",
        "speaker": speaker,
        "occurred_at": occurred,
        "context": "",
    }
    memory = Memory(
        palace=palace,
        kind=kind,
        content=content,
        speaker=speaker,
        occurred_at=occurred,
        status=status,
        search_text=build_search_text(**fields),
    )
    if embed:
        memory.embedding = embed_passages([build_embedding_text(**fields)])[0]
        memory.embedding_model = "multilingual-e5-small"
    if slot:
        memory.slot = slot_assign(palace=palace, kind=kind, actor=Actor.for_system("tests"))
    memory.save()
    return memory


def unit(vector: Any) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float64)
    return v / np.linalg.norm(v)


def topic_vectors(n: int, *, seed: int, spread: float = 0.05, dim: int = 384) -> list[np.ndarray]:
    """`n` unit vectors close to one random direction (cosine to each other ≈ 1 − spread²)."""
    rng = np.random.default_rng(seed)
    base = unit(rng.normal(size=dim))
    return [unit(base + spread * unit(rng.normal(size=dim))) for _ in range(n)]
