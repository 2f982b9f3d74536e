"""The review family's outputs (memory_review_queue, memory_audit, memory_report). Wire names are camelCase, as in
api/mcp/schemas/common.py."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from api.mcp.schemas.common import MemoryRow, Out, PalaceScoped


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


class QueueOut(PalaceScoped):
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
