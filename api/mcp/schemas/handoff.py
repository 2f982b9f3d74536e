"""The handoff family's outputs: the curated-profile and handoff tools (memory_profile_edit, memory_handoff_save,
memory_handoff_load, memory_history, and memory_checkout on a handoff). Wire names are camelCase, as in
api/mcp/schemas/common.py."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from api.mcp.schemas.common import MemoryRow, Out, PalaceScoped


class ProfileVersionOut(Out):
    version: int
    content: str
    rolled_back_from: int | None = Field(description="a rollback copied this version")
    created_by: str
    created_at: datetime


class ProfileEditOut(PalaceScoped):
    palace: str = Field(description='"my palace" or the project origin')
    action: Literal["view", "edit", "rollback"]
    version: int = Field(description="the current version after this call; 0 when there is no curated profile yet")
    content: str = Field(description="the current curated profile text")
    can_edit: bool = Field(description="whether you may edit this palace's profile (owner or editor)")
    history: list[ProfileVersionOut] = Field(description="versions, newest first (up to 20)")


class BootstrapOut(PalaceScoped):
    text: str = Field(description="the bootstrap block, wrapped in <atrium_memory_context>, within the budget")
    tokens: float
    budget: int
    handoff: HandoffOut
    handoff_truncated: bool
    curated_truncated: bool
    memories: list[int] = Field(description="the recent memories shown, by id")
    more: int = Field(description="recent memories not shown")


class HistoryOut(PalaceScoped):
    target: Literal["handoff", "profile", "memory"]
    palace: str
    handoffs: list[HandoffOut] = Field(default_factory=list, description="your handoff versions, newest first")
    profile: list[ProfileVersionOut] = Field(default_factory=list, description="curated profile versions")
    memories: list[MemoryRow] = Field(default_factory=list, description="a memory's supersede chain, newest first")


class HandoffOut(PalaceScoped):
    """A person's handoff in a palace (memory_handoff_save, _load, memory_history, memory_checkout)."""

    palace: str
    version: int = Field(description="0 when no handoff is saved yet")
    doing: str
    next_steps: list[str]
    open_questions: list[str]
    files: list[str]
    restored_from: int | None = Field(default=None, description="a checkout copied this version")
    created_at: datetime | None = None
