"""Tools that bring versions back: memory_checkout (an earlier version current again) and memory_distill_undo."""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from api.mcp import mapping, schemas, text
from api.mcp.registry import tool
from api.mcp.runner import ToolCall, run
from memory import versions

SOURCE = "mcp"


@tool("memory_checkout", title="Bring back an earlier version", write=True)
async def memory_checkout(
    id: Annotated[
        int,
        Field(
            ge=1,
            le=2**63 - 1,
            description="The earlier (superseded) version to bring back, as listed by memory_review.",
        ),
    ],
    reason: Annotated[str, Field(max_length=500, description="Why it comes back (kept in the audit log).")] = "",
) -> Annotated[CallToolResult, schemas.CheckoutOut]:
    """Make an earlier version of a corrected memory current again, e.g. after a wrong correction. History is not
    rewritten: a new version with the old content supersedes the current one, in the same room#slot.

    Returns the new current version. Fails with a conflict when `id` is already current or the current version is
    forgotten (restore that first).
    Next: memory_review the memory to see its whole history.
    """
    return await run(lambda call: _checkout(call, id=id, reason=reason))


def _checkout(call: ToolCall, *, id: int, reason: str) -> tuple[schemas.CheckoutOut, str]:
    new = versions.memory_checkout(memory_id=id, actor=call.actor, reason=reason, source=SOURCE)
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
    done = versions.distill_undo(rule_id=id, actor=call.actor, reason=reason)
    out = schemas.DistillUndoOut(
        rule=done.rule.pk, status=done.rule.status, epitaph=done.rule.epitaph, restored=done.restored
    )
    return out, text.distill_undone(out)
