"""Fixtures for the memory tests: a save helper, an embedder that fails, and a clean override after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from memory.embeddings import EmbedderUnavailable, set_embedder
from memory.services import SaveResult, memory_save
from palace.actors import Actor
from palace.models import Palace


class FailingEmbedder:
    """An embedder whose every call fails, as a crashed model or an unreachable endpoint would."""

    name = "failing"

    def passages(self, texts: list[str]) -> np.ndarray:
        raise EmbedderUnavailable("embedder is down (test)")

    def query(self, text: str) -> np.ndarray:
        raise EmbedderUnavailable("embedder is down (test)")


@pytest.fixture
def embedder_down() -> Iterator[None]:
    set_embedder(FailingEmbedder())
    try:
        yield
    finally:
        set_embedder(None, active=False)


@pytest.fixture
def alice_palace(alice: Any) -> Palace:
    return Palace.objects.get(personal_owner=alice)


@pytest.fixture
def alice_actor(alice: Any) -> Actor:
    return Actor.for_user(alice)


@pytest.fixture
def save(alice_palace: Palace, alice_actor: Actor) -> Callable[..., SaveResult]:
    """memory_save into alice's personal palace as alice, with overridable arguments."""

    def do(content: str, kind: str = "fact", **kwargs: Any) -> SaveResult:
        kwargs.setdefault("palace", alice_palace)
        kwargs.setdefault("actor", alice_actor)
        return memory_save(content=content, kind=kind, **kwargs)

    return do
