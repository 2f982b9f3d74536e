"""Tools of the correction loop: memory_resolve decides a pending contradiction."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp_types import CallToolResult
from pydantic import Field

from api.mcp import mapping, schemas, text
from api.mcp.registry import tool
from api.mcp.runner import ToolCall, run
from memory.lifecycle import edge_resolve

SOURCE = "mcp"


@tool("memory_resolve", title="Decide a contradiction", write=True, destructive=True)
async def memory_resolve(
    edge: Annotated[int, Field(ge=1, description="The edge id, printed as edge=… in save results, search, review.")],
    decision: Annotated[
        Literal["keep_newer", "keep_older", "both_stand", "merge"],
        Field(
            description="keep_newer: the older is superseded by the newer. keep_older: the newer is forgotten. "
            "both_stand: not in conflict (e.g. different contexts; give a reason). merge: `content` replaces both."
        ),
    ],
    reason: Annotated[
        str, Field(max_length=500, description="Why (kept in the audit log; required for both_stand).")
    ] = "",
    content: schemas.MergedContent = "",
) -> Annotated[CallToolResult, schemas.ResolveOut]:
    """Decide a pending contradiction between two memories (an edge a save reported as "may contradict … edge=N").
    Read both with memory_review first. The decision is recorded in the audit log; superseded and forgotten
    memories keep their history and can be restored.

    Returns what happened to each memory (and the merged memory's id for merge).
    Next: nothing, or memory_review to check the result.
    """
    return await run(lambda call: _resolve(call, edge=edge, decision=decision, reason=reason, content=content))


def _resolve(call: ToolCall, *, edge: int, decision: str, reason: str, content: str) -> tuple[schemas.ResolveOut, str]:
    result = edge_resolve(
        edge_id=edge, decision=decision, actor=call.actor, reason=reason, content=content, source=SOURCE
    )
    new = result.new_memory
    out = schemas.ResolveOut(
        edge=result.edge.pk,
        decision=decision,  # type: ignore[arg-type]
        status=result.edge.status,
        newer=result.newer_id,
        older=result.older_id,
        new_memory=mapping.memory_row(new, {new.palace_id: new.palace.label}) if new is not None else None,
    )
    return out, text.resolved(out)
