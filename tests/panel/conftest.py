"""Panel fixtures: memories made directly (slotted like the pipeline does), so page tests do not depend on the
embedder; the live and browser tests use the real write pipeline."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from memory.models import Memory
from palace.actors import Actor
from palace.models import Palace
from palace.oplog import oplog_write
from palace.slots import slot_assign


@pytest.fixture
def make_memory(db: Any, system: Actor) -> Callable[..., Memory]:
    def make(
        palace: Palace,
        content: str = "The deploy runs on Fridays",
        *,
        kind: str = "fact",
        placard: str = "",
        status: str = "active",
        created_at: datetime | None = None,
        occurred_at: datetime | None = None,
        session: str = "",
        speaker: str = "",
        log: bool = True,
    ) -> Memory:
        with transaction.atomic():
            slot = slot_assign(palace=palace, kind=kind, actor=system)
            memory = Memory.objects.create(
                palace=palace,
                kind=kind,
                content=content,
                placard=placard,
                status=status,
                slot=slot,
                created_at=created_at or timezone.now(),
                occurred_at=occurred_at or created_at or timezone.now(),
                source_session=session,
                speaker=speaker,
            )
            if log:
                oplog_write(
                    op="memory.save",
                    actor=system,
                    palace=palace,
                    target_kind="memory",
                    target_id=memory.pk,
                    detail={"kind": kind, "disposition": "accept"},
                )
        return memory

    return make


@pytest.fixture
def personal(alice: Any) -> Palace:
    return Palace.objects.get(personal_owner=alice)


@pytest.fixture(autouse=True)
def health_measured_in_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Measure health in the request, so a page test sees a real report (a server measures in the background), and
    not one an earlier test left in the process's health cache."""
    from ops.health import health_cache_clear
    from panel import health

    monkeypatch.setattr(health, "MEASURE_IN_BACKGROUND", False)
    health_cache_clear()
