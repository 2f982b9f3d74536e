"""The versions family's outputs (memory_checkout, memory_distill_undo). Wire names are camelCase, as in
api/mcp/schemas/common.py."""

from __future__ import annotations

from pydantic import Field

from api.mcp.schemas.common import MemoryRow, Out, PalaceScoped
from api.mcp.schemas.handoff import HandoffOut


class CheckoutOut(PalaceScoped):
    memory: MemoryRow | None = Field(
        default=None, description="the new current version, with the brought-back content (target=memory)"
    )
    handoff: HandoffOut | None = Field(default=None, description="the new handoff version (target=handoff)")
    checkout_of: int = Field(description="the earlier version whose content is current again")
    supersedes: int = Field(description="the version that was current until now (kept in the history)")


class DistillUndoOut(Out):
    rule: int
    status: str
    epitaph: str
    restored: list[int] = Field(description="the members that are active again")
