"""The judge family's output (memory_resolve). Wire names are camelCase, as in
api/mcp/schemas/common.py."""

from __future__ import annotations

from typing import Literal

from api.mcp.schemas.common import MemoryRow, Out


class ResolveOut(Out):
    edge: int
    decision: Literal["keep_newer", "keep_older", "both_stand", "merge"]
    status: str
    newer: int
    older: int
    new_memory: MemoryRow | None = None
