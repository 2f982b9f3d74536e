"""Tools of spaced review and audit: memory_review_queue, memory_review (one memory's audit), memory_report."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp_types import CallToolResult
from pydantic import Field

from api.mcp import mapping, schemas, text
from api.mcp.registry import tool
from api.mcp.runner import ToolCall, run
from memory import lifecycle
from memory.judge import adjudication_why, adjudications_for_edges
from memory.models import Edge
from memory.selectors import memory_chain, memory_edges, memory_get, memory_ops
from palace.errors import InvalidInput
from review.selectors import review_due_count, review_queue
from review.services import review_grade

# --- memory_review_queue -------------------------------------------------------------------------------------------


@tool("memory_review_queue", title="Review queue")
async def memory_review_queue(
    project: schemas.Project = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 20,
) -> Annotated[CallToolResult, schemas.QueueOut]:
    """Spaced review: the memories due for practice today, most overdue first, by cue only — room#slot, placard,
    days overdue — never the body, so you can try to recall each one before looking.

    Returns the due count and the queue.
    Next: for each, recall it, memory_examine the id to check, then memory_report with a grade 0–5.
    """
    return await run(lambda call: _queue(call, project=project, limit=limit))


def _queue(call: ToolCall, *, project: str | None, limit: int) -> tuple[schemas.QueueOut, str]:
    palace_ids = [call.palace(project).pk] if project else None
    items = review_queue(user=call.user, palace_ids=palace_ids, limit=limit)
    rows = [
        schemas.QueueRow(
            id=i.memory_id,
            kind=i.kind,
            coordinate=i.coordinate,
            placard=i.placard,
            palace_id=i.palace_id,
            due_at=i.due_at,
            days_overdue=i.days_overdue,
            repetitions=i.repetitions,
        )
        for i in items
    ]
    out = schemas.QueueOut(due=review_due_count(user=call.user, palace_ids=palace_ids), items=rows)
    return out, text.queue(out)


# --- memory_review -------------------------------------------------------------------------------------------------


@tool("memory_review", title="Audit one memory")
async def memory_review(id: schemas.MemoryId) -> Annotated[CallToolResult, schemas.AuditOut]:
    """Audit one memory before trusting or changing it: its full text, where it came from (every source it
    absorbed), its supersede chain (corrections, newest first), the memories it may contradict, and the operation
    log of every change.

    Use it when a save reported a possible contradiction, or when a memory looks doubtful.
    Next: memory_update to correct it, memory_forget to drop it, or memory_report its outcome.
    """
    return await run(lambda call: _audit(call, id=id))


def _audit(call: ToolCall, *, id: int) -> tuple[schemas.AuditOut, str]:
    memory = memory_get(user=call.user, memory_id=id)
    labels = {memory.palace_id: memory.palace.label}
    history = memory_chain(memory=memory)
    contradictions = []
    edges = memory_edges(memory=memory, kind=Edge.Kind.CONTRADICTS, limit=None)
    rulings = adjudications_for_edges(edge_ids=[e.pk for e in edges])
    for edge in edges:
        out_going = edge.from_memory_id == id
        other = edge.to_memory if out_going else edge.from_memory
        ruling = rulings.get(edge.pk)
        contradictions.append(
            schemas.EdgeOut(
                id=edge.pk,
                resolution=edge.resolution,
                resolution_reason=edge.resolution_reason,
                judged=adjudication_why(ruling) if ruling is not None else "",
                other_id=other.pk,
                other_status=other.status,
                other_placard=other.placard,
                direction="out" if out_going else "in",
                status=edge.status,
                created_at=edge.created_at,
            )
        )
    oplog = [
        schemas.OpRow(
            op=o.op,
            at=o.created_at,
            actor=o.actor_name or o.actor_kind,
            target_id=o.target_id,
            reason=o.reason,
            detail=dict(o.detail),
        )
        for o in memory_ops(chain=history)
    ]
    out = schemas.AuditOut(
        memory=mapping.memory_row(memory, labels, max_chars=None),
        sources=[dict(s) for s in memory.sources],
        supersede_chain=[mapping.memory_row(m, labels) for m in history.newest_first],
        contradictions=contradictions,
        oplog=oplog,
    )
    return out, text.audit(out)


# --- memory_report -------------------------------------------------------------------------------------------------


@tool("memory_report", title="Report an outcome or grade a recall", write=True)
async def memory_report(
    id: schemas.MemoryId,
    outcome: Annotated[
        Literal["success", "failure"] | None,
        Field(description="Did acting on this memory work? success +0.05, failure -0.1 confidence."),
    ] = None,
    grade: Annotated[
        int | None,
        Field(ge=0, le=5, description="Instead of outcome: how well you recalled it in review (0–5, SM-2)."),
    ] = None,
    note: Annotated[str, Field(max_length=500)] = "",
) -> Annotated[CallToolResult, schemas.ReportOut]:
    """Feed back on a memory. After using a memory (especially a skill), report `outcome` success or failure: its
    confidence moves, and memories that keep failing fade. During review, report a `grade` 0–5 for how well you
    recalled it from its cues: this advances its spaced-review schedule (SM-2).

    Returns the new confidence, or the next review date.
    Next: continue with memory_review_queue when reviewing.
    """
    return await run(lambda call: _report(call, id=id, outcome=outcome, grade=grade, note=note))


def _report(
    call: ToolCall, *, id: int, outcome: str | None, grade: int | None, note: str
) -> tuple[schemas.ReportOut, str]:
    if (outcome is None) == (grade is None):
        raise InvalidInput("pass exactly one of `outcome` (success | failure) or `grade` (0–5)")
    if outcome is not None:
        row = lifecycle.memory_report(memory_id=id, actor=call.actor, outcome=outcome, note=note)
        out = schemas.ReportOut(id=row.pk, recorded="outcome", outcome=outcome, confidence=row.confidence)
        return out, text.reported(out)
    assert grade is not None
    card = review_grade(memory_id=id, grade=grade, actor=call.actor)
    out = schemas.ReportOut(
        id=id,
        recorded="grade",
        grade=grade,
        next_due_at=card.due_at,
        interval_days=card.interval_days,
        repetitions=card.repetitions,
    )
    return out, text.reported(out)
