"""Typed inputs and outputs of the MCP tools: inputs carry limits, outputs become `outputSchema` +
`structuredContent`. Wire names are camelCase (the MCP convention); Python names stay snake_case."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from palace.kinds import KindName

Kind = KindName  # the one definition of the kinds (palace.kinds), under the name the tools use
MemoryId = Annotated[int, Field(ge=1, le=2**63 - 1, description="A memory id, as printed `id=` / `#id`.")]
Project = Annotated[
    str | None,
    Field(
        default=None,
        max_length=400,
        description=(
            "Git origin of a project palace you are a member of (e.g. github.com/org/repo or "
            "git@github.com:org/repo.git). Omit for your personal palace."
        ),
    ),
]
# Every tool argument that carries memory content has this type, so content over the limit is refused by the
# schema (a tool error naming the limit) before any processing.
CONTENT_LIMIT = settings.ATRIUM_MAX_CONTENT_CHARS
Content = Annotated[
    str,
    Field(
        min_length=1,
        max_length=CONTENT_LIMIT,
        description=f"One idea, at most {CONTENT_LIMIT} characters (split longer text into several memories).",
    ),
]
Placard = Annotated[str, Field(max_length=200)]
Importance = Annotated[
    float | None,
    Field(
        default=None,
        ge=0,
        le=1,
        description=(
            "0–1: how much it matters later. Omit to let the server decide (decisions and preferences start higher, "
            "episodes lower, 'always/never/must' raises, 'maybe/for now' lowers); low-importance memories fade when "
            "unused."
        ),
    ),
]
Restore = Annotated[
    bool,
    Field(
        description=(
            "If the content restates a forgotten memory, restore that memory instead of deferring (default: the save "
            "is deferred with the forgotten memory's id and epitaph)."
        )
    ),
]
Reason = Annotated[str, Field(max_length=500)]


class Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class In(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class EntityIn(In):
    name: Annotated[str, Field(min_length=1, max_length=200, description="The name as you would write it.")]
    kind: Annotated[
        str | None, Field(default=None, max_length=32, description="person | project | tool | concept | place | other")
    ] = None
    aliases: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=200)]],
        Field(default_factory=list, max_length=20, description="Other names for the same entity."),
    ]


Entities = Annotated[
    list[EntityIn] | None,
    Field(
        default=None,
        max_length=20,
        description=(
            "Optional: the entities this memory is about, stated by you (linked as source=agent), e.g. "
            '[{"name": "Redis", "kind": "tool"}, {"name": "Bob Lee", "kind": "person", "aliases": ["Bob"]}]. '
            "The server also finds mentions itself."
        ),
    ),
]


class EntityTagOut(Out):
    id: int
    name: str
    kind: str
    source: str = Field(default="", description="who found the mention: rules | model | agent | merge")


class SaveItem(In):
    content: Content
    kind: Kind
    placard: Placard = ""
    importance: Importance = None
    restore: Restore = False
    entities: Entities = None


class MemoryRow(Out):
    id: int
    kind: str
    status: str
    coordinate: str | None = Field(description="room#slot in its palace; null when not slotted yet")
    palace: str = Field(description='"my palace" or the project origin')
    placard: str
    content: str
    content_truncated: bool = False
    confidence: float
    version: int
    occurred_at: datetime
    created_at: datetime


class SaveItemOut(Out):
    index: int
    disposition: Literal["accept", "merge", "defer", "drop", "error"]
    id: int | None = None
    merged_into: int | None = None
    coordinate: str | None = None
    contradicts: list[int] = Field(default_factory=list)
    edges: list[int] = Field(default_factory=list, description="pending contradiction edges (memory_resolve edge=…)")
    redactions: list[str] = Field(default_factory=list)
    degraded: list[str] = Field(default_factory=list)
    hint: str = ""
    error: str = ""
    forgotten: int | None = Field(default=None, description="a forgotten memory this content restates")
    restored: bool = Field(default=False, description="true when this save restored that forgotten memory")
    entities: list[EntityTagOut] = Field(default_factory=list, description="the entities linked to the memory")
    entities_by: str = Field(default="", description="who found the mentions in the text: rules | model")
    entities_fallback: str = Field(
        default="", description="timeout | failed: the model was asked and did not answer, the rules ran instead"
    )
    entities_error: str = Field(default="", description="linking failed (the memory was saved all the same)")


class SaveOut(Out):
    palace: str
    count: int
    failed: int
    items: list[SaveItemOut]


class FactOut(Out):
    """A fact as it stood at the asked point: valid_to / supersededAt as known then (null: still true / not
    replaced yet)."""

    id: int
    entity_id: int
    entity: str
    predicate: str
    content: str
    valid_from: datetime | None = Field(description="when it became true in the world (null: unknown)")
    valid_to: datetime | None = Field(description="when it stopped being true (null: still true, as known then)")
    recorded_at: datetime = Field(description="when Atrium learned it")
    superseded_at: datetime | None = Field(description="when a later fact replaced this record (as known then)")
    replaces: int | None
    replaced_by: int | None
    state: Literal["current", "ended", "replaced", "not_yet_valid"]


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


class TimelineRow(Out):
    seq: int | None = Field(default=None, description="position on the fixed tour route (tour order only)")
    coordinate: str | None
    memory: MemoryRow | None


class TimelineOut(Out):
    order: Literal["created", "tour"]
    palace: str
    rows: list[TimelineRow]
    next_cursor: str | None = Field(default=None, description="pass as `cursor` for the next page")
    total: int | None = Field(default=None, description="stops on the route (tour order only)")


class UpdateOut(Out):
    memory: MemoryRow
    supersedes: int


class ForgetOut(Out):
    id: int
    status: str
    epitaph: str
    version: int


class ReportOut(Out):
    id: int
    recorded: Literal["outcome", "grade"]
    outcome: str | None = None
    confidence: float | None = None
    grade: int | None = None
    next_due_at: datetime | None = None
    interval_days: int | None = None
    repetitions: int | None = None


class QueueRow(Out):
    id: int
    kind: str
    coordinate: str
    placard: str
    palace_id: int
    due_at: datetime
    days_overdue: int
    repetitions: int


class QueueOut(Out):
    due: int
    items: list[QueueRow]


class EdgeOut(Out):
    id: int = Field(description="the edge id (memory_resolve edge=…)")
    other_id: int
    other_status: str
    other_placard: str
    direction: Literal["out", "in"]
    status: str
    created_at: datetime
    resolution: str = ""
    resolution_reason: str = ""
    judged: str = Field(default="", description="the judge's ruling on this pair, when one was recorded")


class OpRow(Out):
    op: str
    at: datetime
    actor: str
    target_id: int | None
    reason: str
    detail: dict[str, object]


class AuditOut(Out):
    memory: MemoryRow
    sources: list[dict[str, object]]
    supersede_chain: list[MemoryRow] = Field(description="newest first: successors, this memory, predecessors")
    contradictions: list[EdgeOut]
    oplog: list[OpRow]


class RoomOut(Out):
    name: str
    kind: str
    capacity: int
    slots_used: int
    active: int
    latest_placard: str


class StatsOut(Out):
    palace: str
    total: int
    by_status: dict[str, int]
    by_kind: dict[str, int]
    without_vector: int
    unslotted: int
    review_enrolled: int
    reviews_due: int
    pending_contradictions: int
    created_last_7_days: int
    signal_ratio: float | None
    signal_reason: str
    rooms: list[RoomOut]


class ExamineOut(Out):
    memories: list[MemoryRow]
    not_found: list[int] = Field(description="ids that do not exist or that you may not read")


class NeighbourOut(Out):
    hops: int
    via: str
    direction: str
    from_id: int
    memory: MemoryRow


class NeighboursOut(Out):
    origin: MemoryRow
    neighbours: list[NeighbourOut]


class TourStopOut(Out):
    seq: int
    coordinate: str
    memory: MemoryRow | None


class TourOut(Out):
    mode: Literal["fixed", "thematic"]
    palace: str
    theme: str = ""
    total: int
    stops: list[TourStopOut]
    search_mode: str = ""
    degraded: list[str] = Field(default_factory=list)
    note: str = ""


class ForgottenOut(Out):
    palace: str
    memories: list[MemoryRow]
    next_cursor: str | None


class DistillClusterOut(Out):
    kind: str
    member_ids: list[int]
    min_similarity: float
    content: str
    placard: str
    producer: str
    fallback: str
    confidence: float
    rule_id: int | None
    skipped: str


class DistillOut(Out):
    mode: Literal["suggest", "apply"]
    palace: str
    llm_configured: bool
    applied: int
    clusters: list[DistillClusterOut]


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


class HandoffOut(Out):
    """A person's handoff in a palace (memory_handoff_save, _load, memory_history, memory_checkout)."""

    palace: str
    version: int = Field(description="0 when no handoff is saved yet")
    doing: str
    next_steps: list[str]
    open_questions: list[str]
    files: list[str]
    restored_from: int | None = Field(default=None, description="a checkout copied this version")
    created_at: datetime | None = None


class CheckoutOut(Out):
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


class ResolveOut(Out):
    edge: int
    decision: Literal["keep_newer", "keep_older", "both_stand", "merge"]
    status: str
    newer: int
    older: int
    new_memory: MemoryRow | None = None


class EntityRef(Out):
    id: int
    name: str
    kind: str
    palace: str
    aliases: list[str] = Field(default_factory=list)


class FactWrite(BaseModel):
    """One fact to write. Limits are checked per entry by the server, so one bad entry fails alone (in `failed`);
    unknown fields are reported there too."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")

    entity: str | None = Field(default=None, description="Entity name (created when new; at most 200 characters).")
    entity_id: int | None = Field(default=None, alias="entityId", description="Or the entity's id (entityId=).")
    content: str = Field(description="The fact: one short statement (at most 2000 characters).")
    predicate: str | None = Field(default=None, description="Optional relation, e.g. lives_in, uses, owns.")
    kind: str | None = Field(default=None, description="Kind of a new entity: person, project, tool, concept, place.")
    replaces: int | None = Field(default=None, description="fact= id this one replaces: ends only that fact.")
    valid_from: str | None = Field(
        default=None,
        alias="valid_from",
        description="ISO date it became true (default: unknown; when replacing, now).",
    )


class FactWrittenOut(Out):
    index: int
    id: int
    entity_id: int
    entity: str
    entity_created: bool
    replaces: int | None = None


class FactFailedOut(Out):
    index: int
    reason: str
    candidates: list[EntityRef] = Field(default_factory=list)


class FactsOut(Out):
    mode: Literal["write", "query"]
    palace: str | None = None
    written: list[FactWrittenOut] = Field(default_factory=list)
    failed: list[FactFailedOut] = Field(default_factory=list)
    entity: EntityRef | None = None
    facts: list[FactOut] = Field(default_factory=list)
    candidates: list[EntityRef] = Field(default_factory=list, description="the name is ambiguous: pass entityId")
    suggestions: list[EntityRef] = Field(default_factory=list, description="no such entity; did you mean")
    as_of: datetime | None = None
    known_at: datetime | None = None
    include_invalid: bool = False
    hidden: int = Field(default=0, description="facts not shown (ended or replaced; includeInvalid shows them)")
