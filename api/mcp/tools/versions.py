"""Tools that bring versions back: memory_checkout (an earlier version current again) and memory_distill_undo."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp_types import CallToolResult
from pydantic import Field

from api.mcp import mapping, schemas, text
from api.mcp.registry import tool
from api.mcp.runner import ToolCall, run
from api.mcp.tools.handoff import handoff_out
from memory import lifecycle
from memory.context import handoff_checkout
from memory.jobs import distill_revert

SOURCE = "mcp"


@tool("memory_checkout", title="Bring back an earlier version", write=True)
async def memory_checkout(
    id: Annotated[
        int,
        Field(
            ge=1,
            le=2**63 - 1,
            description=(
                "The earlier (superseded) memory version to bring back, as listed by memory_review; with "
                "target=handoff, the version number of your handoff (memory_history)."
            ),
        ),
    ],
    reason: Annotated[str, Field(max_length=500, description="Why it comes back (kept in the audit log).")] = "",
    target: Annotated[
        Literal["memory", "handoff"], Field(description="memory (default) or handoff: what `id` names.")
    ] = "memory",
    project: schemas.Project = None,
) -> Annotated[CallToolResult, schemas.CheckoutOut]:
    """Make an earlier version current again ("revert forward"), e.g. after a wrong correction. History is not
    rewritten and no data is lost: a new version with the old content becomes current, and the version moves on.

    - a memory: the new version supersedes the current one, in the same room#slot. Fails with a conflict when
      `id` is already current or the current version is forgotten (restore that first).
    - target=handoff: `id` is a version of your handoff in `project` (else your token's default project, else your
      personal palace); a new handoff version copies it (the next memory_handoff_save expects the new number).
    Next: memory_review the memory, or memory_history target=handoff, to see the whole history.
    """
    return await run(lambda call: _checkout(call, id=id, reason=reason, target=target, project=project))


def _checkout(
    call: ToolCall, *, id: int, reason: str, target: str = "memory", project: str | None = None
) -> tuple[schemas.CheckoutOut, str]:
    if target == "handoff":
        palace = call.palace(project, write=True)
        row = handoff_checkout(palace=palace, actor=call.actor, version=id, reason=reason)
        handoff = handoff_out(row, palace)
        done = schemas.CheckoutOut(handoff=handoff, checkout_of=id, supersedes=row.version - 1)
        return done, text.handoff_saved(handoff)
    new = lifecycle.memory_checkout(memory_id=id, actor=call.actor, reason=reason, source=SOURCE)
    out = schemas.CheckoutOut(
        memory=mapping.memory_row(new, {new.palace_id: new.palace.label}),
        checkout_of=id,
        supersedes=new.supersedes_id or 0,
    )
    return out, text.checked_out(out)


@tool("memory_distill_undo", title="Undo a distillation", write=True)
async def memory_distill_undo(
    id: Annotated[int, Field(ge=1, le=2**63 - 1, description="The distilled rule's id (rule_id from memory_distill).")],
    reason: Annotated[str, Field(max_length=500, description="Why (the rule's epitaph).")] = "",
) -> Annotated[CallToolResult, schemas.DistillUndoOut]:
    """Undo a distillation in one step: the memories it merged become active again and the rule is archived
    (restorable) with your reason. The same members are not merged again by the scheduled distillation.

    Next: memory_search finds the members again.
    """
    return await run(lambda call: _undo(call, id=id, reason=reason))


def _undo(call: ToolCall, *, id: int, reason: str) -> tuple[schemas.DistillUndoOut, str]:
    done = distill_revert(rule_id=id, actor=call.actor, reason=reason)
    out = schemas.DistillUndoOut(
        rule=done.rule.pk, status=done.rule.status, epitaph=done.rule.epitaph, restored=done.restored
    )
    return out, text.distill_undone(out)
