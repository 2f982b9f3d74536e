"""The browse family's outputs (memory_timeline, memory_tour, memory_neighbours, memory_stats, the closed wing). Wire
names are camelCase, as in api/mcp/schemas/common.py."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from api.mcp.schemas.common import MemoryRow, Out, PalaceScoped


class TimelineRow(Out):
    seq: int | None = Field(default=None, description="position on the fixed tour route (tour order only)")
    coordinate: str | None
    memory: MemoryRow | None


class TimelineOut(PalaceScoped):
    order: Literal["created", "tour"]
    palace: str
    rows: list[TimelineRow]
    next_cursor: str | None = Field(default=None, description="pass as `cursor` for the next page")
    total: int | None = Field(default=None, description="stops on the route (tour order only)")


class RoomOut(Out):
    name: str
    kind: str
    capacity: int
    slots_used: int
    active: int
    latest_placard: str


class StatsOut(PalaceScoped):
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


class TourOut(PalaceScoped):
    mode: Literal["fixed", "thematic"]
    palace: str
    theme: str = ""
    total: int
    stops: list[TourStopOut]
    search_mode: str = ""
    degraded: list[str] = Field(default_factory=list)
    note: str = ""


class ForgottenOut(PalaceScoped):
    palace: str
    memories: list[MemoryRow]
    next_cursor: str | None
