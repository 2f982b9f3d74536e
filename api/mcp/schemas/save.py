"""The save family's outputs (memory_save, memory_update, memory_forget, memory_restore, memory_distill) and the
batch item. Wire names are camelCase, as in api/mcp/schemas/common.py."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from api.mcp.schemas.common import (
    Content,
    Entities,
    EntityTagOut,
    Importance,
    In,
    Kind,
    MemoryRow,
    Out,
    Placard,
    Restore,
)


class SaveItem(In):
    content: Content
    kind: Kind
    placard: Placard = ""
    importance: Importance = None
    restore: Restore = False
    entities: Entities = None


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


class UpdateOut(Out):
    memory: MemoryRow
    supersedes: int


class ForgetOut(Out):
    id: int
    status: str
    epitaph: str
    version: int


class RestoreOut(Out):
    memory: MemoryRow = Field(description="the memory, active again")
    was: str = Field(description="the status it came back from: forgotten | archived")
    epitaph: str = Field(description="the epitaph it had (why it was forgotten or archived)")


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
    job: int = Field(description="the distillation job's id: memory_distill job=<id> asks for its state and result")
    state: Literal["queued", "running", "done", "failed"] = Field(description="where the worker is with the job")
    delivery: Literal["inline", "queued", "lookup"] = Field(
        description=(
            "inline: the worker finished within a short wait, the result is here; queued: it had not finished, ask "
            "again with job=<id>; lookup: this answers a job=<id> call"
        )
    )
    mode: Literal["suggest", "apply"]
    palace: str
    llm_configured: bool | None = Field(description="whether an LLM was configured for the run (null until done)")
    applied: int
    clusters: list[DistillClusterOut] = Field(description="the clusters found (empty until the job is done)")
    error: str = Field(default="", description="why the job failed (state failed)")
