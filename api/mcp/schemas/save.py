"""The save family's outputs (memory_save, memory_update, memory_forget, memory_restore, memory_distill) and the
batch item. Wire names are camelCase, as in api/mcp/schemas/common.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

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
    PalaceScoped,
    Placard,
    Restore,
)
from api.schemas import DistillClusterFields, DistillDelivery, DistillJobState, DistillMode, Instant

Session = Annotated[
    str | None,
    Field(
        default=None,
        max_length=200,
        description="Optional: the id of the conversation this comes from; episodes of one session are grouped.",
    ),
]
Turn = Annotated[
    Annotated[int, Field(ge=0, le=10**9)] | Annotated[str, Field(max_length=100)] | None,
    Field(default=None, description="Optional: the turn of that session (a number or a short id)."),
]
OccurredAt = Annotated[
    Instant | None,
    Field(
        default=None,
        description="Optional: when it happened, ISO 8601 with a UTC offset (e.g. 2026-03-02T14:05:00+01:00); "
        "default: now.",
    ),
]


class SaveItem(In):
    content: Content
    kind: Kind
    placard: Placard = ""
    importance: Importance = None
    restore: Restore = False
    entities: Entities = None
    session: Session = None
    turn: Turn = None
    occurred_at: OccurredAt = None


def _turn_text(turn: int | str | None) -> str:
    return "" if turn is None else str(turn).strip()


@dataclass(frozen=True)
class Provenance:
    """Where a save came from in the agent's conversation (memory_save's `session`, `turn`, `occurred_at`): stored
    as the memory's source_session, source_turn and occurred_at, as the REST door does."""

    session: str | None = None
    turn: int | str | None = None
    occurred_at: datetime | None = None

    def turn_text(self) -> str:
        return _turn_text(self.turn)

    def item_fields(self, item: SaveItem) -> dict[str, Any]:
        """A batch item for the save pipeline: its own session, turn and time, else these."""
        fields = item.model_dump(exclude={"session", "turn", "occurred_at"})
        fields["source_session"] = (item.session if item.session is not None else self.session) or ""
        fields["source_turn"] = _turn_text(item.turn if item.turn is not None else self.turn)
        fields["occurred_at"] = item.occurred_at or self.occurred_at
        return fields


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
    entities_note: str = Field(
        default="", description="a name created beside an entity one of its aliases names: merge them if they are one"
    )


class SaveOut(PalaceScoped):
    palace: str
    count: int
    failed: int
    items: list[SaveItemOut]
    time_zone_note: str | None = Field(
        default=None, description="which date arguments had no time zone, and the zone they were read in"
    )


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


class DistillClusterOut(Out, DistillClusterFields):
    pass


class DistillOut(PalaceScoped):
    job: int = Field(description="the distillation job's id: memory_distill job=<id> asks for its state and result")
    state: DistillJobState = Field(description="where the worker is with the job")
    delivery: DistillDelivery = Field(
        description=(
            "inline: the worker finished within a short wait, the result is here; queued: it had not finished, ask "
            "again with job=<id>; lookup: this answers a job=<id> call"
        )
    )
    mode: DistillMode
    palace: str
    llm_configured: bool | None = Field(description="whether an LLM was configured for the run (null until done)")
    applied: int
    clusters: list[DistillClusterOut] = Field(description="the clusters found (empty until the job is done)")
    error: str = Field(default="", description="why the job failed (state failed)")
