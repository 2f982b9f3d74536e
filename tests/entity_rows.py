"""Entities made directly as rows (extraction at write time is another module's job), for the entity tests."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memory.knowledge import name_key
from memory.models import Entity, Memory, MemoryEntity
from palace.models import Palace


def make_entity(
    palace: Palace,
    name: str,
    *,
    kind: str = "person",
    aliases: Sequence[str] = (),
    memories: Sequence[Memory] = (),
    last_mentioned_at: datetime | None = None,
) -> Entity:
    entity = Entity.objects.create(
        palace=palace,
        name=name,
        kind=kind,
        key=name_key(name),
        aliases=list(aliases),
        alias_keys=[name_key(a) for a in aliases],
        last_mentioned_at=last_mentioned_at,
    )
    for memory in memories:
        MemoryEntity.objects.create(palace=palace, memory=memory, entity=entity)
    return entity
