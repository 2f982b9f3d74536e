"""The recall family's outputs (memory_search, memory_assess, memory_examine, memory_profile). Wire names are camelCase,
as in api/mcp/schemas/common.py."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from api.mcp.schemas.common import EntityTagOut, FactOut, MemoryRow, Out


class SearchHit(Out):
    id: int
    ref: str = Field(description="cite this in memory_assess evidenceRefs")
    label: str = Field(
        description='how it was found, e.g. "sem#2 + lex#1", "lex#3", "edge:next from #12"; "+ ent": linked to an '
        "entity the query names"
    )
    score: float
    kind: str
    coordinate: str | None
    palace: str
    placard: str
    content: str
    content_truncated: bool
    occurred_at: datetime
    cues: list[str] = Field(default_factory=list, description="neighbouring slots of the same room")
    open_edges: list[int] = Field(
        default_factory=list, description="pending contradiction edges of this memory (decide with memory_resolve)"
    )
    facts: list[FactOut] = Field(
        default_factory=list, description="facts of the entities this memory is linked to, true at the search's point"
    )
    entities: list[EntityTagOut] = Field(default_factory=list, description="the entities this memory is linked to")


class SearchOut(Out):
    query: str
    mode: Literal["hybrid", "lexical", "semantic", "none"]
    degraded: list[str]
    common_words: list[str] = Field(
        default_factory=list,
        description="query words (stemmed) too common in this store to find keyword matches on their own; "
        "they still rank what the other words found. Add a more specific word to search by keyword.",
    )
    batch_id: str | None = Field(description="the evidence batch for memory_assess; null when nothing matched")
    hits: list[SearchHit]
    view: str = Field(default="current", description='"current", or the as-of view the hits come from')
    as_of: datetime | None = None
    known_at: datetime | None = None


class RejectedRefOut(Out):
    ref: str
    reason: str


class AssessOut(Out):
    batch_id: str
    verdict: Literal["sufficient", "insufficient"]
    next_strategy: str
    claimed_adequate: bool
    claimed_strategy: str
    valid_refs: list[str]
    memory_ids: list[int]
    rejected_refs: list[RejectedRefOut]
    missing: list[str]
    reasons: list[str]
    reinforced: list[int] = Field(description="memories whose confidence this verdict raised (+0.05 each)")
    reinforcement: str = Field(description="what the verdict did to confidence, and why (a read token: nothing)")


class ExamineOut(Out):
    memories: list[MemoryRow]
    not_found: list[int] = Field(description="ids that do not exist or that you may not read")


class ProfileLineOut(Out):
    id: int
    coordinate: str
    kind: str
    placard: str
    body: str
    indexed: bool
    truncated: bool


class ProfileOut(Out):
    text: str = Field(description="the profile, wrapped in <atrium_memory_context>, within the token budget")
    tokens: float
    budget: int
    curated: bool
    lines: list[ProfileLineOut]
    more: int
    reviews_due: int | None
