"""Fixtures for the memory tests: alice's palace and actor, and a save helper (the failing embedder is shared, in
tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memory.save import SaveResult, memory_save
from palace.actors import Actor
from palace.models import Palace


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
