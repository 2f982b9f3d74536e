"""The five kinds of memory, defined once.

Rooms are per kind (palace.slots names them) and every memory has one (memory.models.Memory.kind); the REST and MCP
schemas, the panel's forms and its labels all read the kinds from here. It lives in `palace`, the lowest layer,
because the palace's rooms are laid out by kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from django.db import models


class MemoryKind(models.TextChoices):
    FACT = "fact"
    PREFERENCE = "preference"
    DECISION = "decision"
    EPISODE = "episode"
    SKILL = "skill"


KINDS: tuple[str, ...] = tuple(MemoryKind.values)

if TYPE_CHECKING:
    KindName = str
else:
    # The same values as a Literal, for request schemas (ninja, pydantic): an inline `enum` in OpenAPI and in the MCP
    # tools' inputSchema, exactly as a hand-written Literal["fact", ...] gives.
    KindName = Literal[KINDS]
