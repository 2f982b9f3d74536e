"""The recall family's outputs (memory_search, memory_assess, memory_examine, memory_profile). Wire names are camelCase,
as in api/mcp/schemas/common.py."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from api.mcp.schemas.common import EntityTagOut, FactOut, MemoryRow, Out, PalaceScoped


class SearchHit(Out):
    id: int
    ref: str = Field(description="cite this in memory_assess evidence_refs")
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


class SearchHowOut(Out):
    """How the search was made (the same fields as REST's `how`)."""

    arms: list[str] = Field(description="the retrieval arms that ran: lexical (full text), semantic (vectors)")
    matched: bool = Field(description="false when nothing passed on either arm: no hits, nothing is evidence")
    floor: float | None = Field(description="the cosine a memory sharing no word with the query needed; null: none")
    below_floor: int = Field(description="candidates that shared no word with the query and sat below the floor")
    query_read: str = Field(
        default="as given", description='"as given", or for a dialogue (speaker: text lines) the turns each arm read'
    )
    database: str = Field(
        default="primary",
        description='the database the search read: "primary", or a read replica\'s alias (its rows may lag by seconds)',
    )
    rewrite: Literal["off", "rewritten", "failed", "timeout"] = Field(description="query rewriting by a chat model")
    queries: list[str] = Field(description="the queries that ran, the one given first")
    rewrite_error: str = ""
    fallback: str = Field(description='the fallback this search ran with: "none" or "overview"')
    fallback_from: Literal["request", "setting"] = Field(description="your argument, or your account's setting")
    fallback_used: bool = Field(description="true when the fallback answered (an overview on a miss)")


class OverviewRoomsOut(Out):
    palace: str
    kind: str
    rooms: int
    memories: int
    newest: list[str] = Field(description="the names of the newest rooms of this kind")


class OverviewEntryOut(Out):
    label: Literal["overview"] = Field(description='always "overview": not found by your query, not evidence')
    why: Literal["recent", "reinforced"]
    memory: MemoryRow


class OverviewOut(Out):
    label: Literal["overview"]
    rooms: list[OverviewRoomsOut]
    entries: list[OverviewEntryOut] = Field(description="no ref: never cite these in memory_assess")


class SearchOut(PalaceScoped):
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
    time_zone_note: str | None = Field(
        default=None, description="which date arguments had no time zone, and the zone they were read in"
    )
    how: SearchHowOut = Field(description="how the search was made")
    overview: OverviewOut | None = Field(
        default=None, description="on a miss with fallback overview: what the palaces hold (not an answer)"
    )


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


class ProfileOut(PalaceScoped):
    text: str = Field(description="the profile, wrapped in <atrium_memory_context>, within the token budget")
    tokens: float
    budget: int
    curated: bool
    lines: list[ProfileLineOut]
    more: int
    reviews_due: int | None
