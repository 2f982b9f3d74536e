"""Tools that write memories: memory_save, memory_update, memory_forget, memory_restore, memory_distill."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp_types import CallToolResult
from pydantic import Field

from api.mcp import mapping, schemas, text
from api.mcp.registry import tool
from api.mcp.runner import ToolCall, run
from api.schemas import zone_note
from memory import lifecycle, save
from memory.jobs import distill_job_get, distill_job_wait
from memory.selectors import memory_get
from memory.tasks import distill_job_queue
from palace.errors import InvalidInput, NotFound

SOURCE = "mcp"


# --- memory_save ---------------------------------------------------------------------------------------------------


@tool("memory_save", title="Save memories", write=True)
async def memory_save(
    content: schemas.Content | None = None,
    kind: Annotated[
        schemas.Kind | None,
        Field(description="fact | preference | decision | episode | skill (required with `content`)."),
    ] = None,
    placard: Annotated[str, Field(max_length=200, description="Optional short cue: unique, distinctive, dated.")] = "",
    project: schemas.Project = None,
    items: Annotated[
        list[schemas.SaveItem] | None,
        Field(
            min_length=1,
            max_length=10,
            description="Instead of `content`: up to 10 {content, kind, placard, importance, restore, entities}.",
        ),
    ] = None,
    importance: schemas.Importance = None,
    restore: schemas.Restore = False,
    entities: schemas.Entities = None,
    session: schemas.Session = None,
    turn: schemas.Turn = None,
    occurred_at: schemas.OccurredAt = None,
) -> Annotated[CallToolResult, schemas.SaveOut]:
    """Save durable knowledge to long-term memory: facts, preferences, decisions, episodes (what happened) and
    skills (how to do something). Use it when you learn something worth knowing in a later session; one idea per
    memory. Pass `content` + `kind` for one memory, or `items` (≤ 10) for several.

    Returns each item's disposition: accept (new memory, with its id and room#slot), merge (a restatement that
    reinforced an existing memory), defer (saved, but it may contradict the listed memories: each pending
    contradiction has an edge id, and the hint says why it was judged so), drop (no information, nothing stored).
    Secrets are redacted before storage. Saves go to `project` (a project palace you may write, or "personal"),
    else to your token's default project, else to your personal palace. Content that restates a forgotten memory
    is deferred with that memory's id and epitaph (nothing saved) unless `restore` is true, which brings the
    original back. `entities` (optional, also per item) states who and what the memory is about; the server finds
    mentions too, and each item lists the entities linked. `session` and `turn` (optional: your conversation's id
    and the turn in it) group episodes by session, and `occurred_at` (ISO 8601) is when it happened, if not now;
    with `items` they apply to every item that does not give its own.
    Next: if an item may contradict another, memory_review it, then memory_resolve the edge (or memory_update).
    """
    return await run(
        lambda call: _save(
            call,
            content=content,
            kind=kind,
            placard=placard,
            project=project,
            items=items,
            importance=importance,
            restore=restore,
            entities=entities,
            provenance=schemas.Provenance(session=session, turn=turn, occurred_at=occurred_at),
        )
    )


def _save(
    call: ToolCall,
    *,
    content: str | None,
    kind: schemas.Kind | None,
    placard: str,
    project: str | None,
    items: list[schemas.SaveItem] | None,
    importance: float | None = None,
    restore: bool = False,
    entities: list[schemas.EntityIn] | None = None,
    provenance: schemas.Provenance | None = None,
) -> tuple[schemas.SaveOut, str]:
    given = provenance or schemas.Provenance()
    if (content is None) == (items is None):
        raise InvalidInput("pass either `content` with `kind`, or `items` (1–10 objects with content and kind)")
    if content is not None and kind is None:
        raise InvalidInput("`kind` is required with `content`: fact, preference, decision, episode or skill")
    if items is not None and entities is not None:
        raise InvalidInput("with `items`, give each item its own `entities`")
    palace = call.palace(project)
    if items is None:
        assert content is not None
        assert kind is not None
        result = save.memory_save(
            palace=palace,
            actor=call.actor,
            content=content,
            kind=kind,
            placard=placard,
            source=SOURCE,
            importance=importance,
            restore=restore,
            entities=[e.model_dump() for e in entities] if entities is not None else None,
            occurred_at=given.occurred_at,
            source_session=given.session or "",
            source_turn=given.turn_text(),
        )
        out = schemas.SaveOut(palace=palace.label, count=1, failed=0, items=[mapping.save_item(0, result)])
        out.time_zone_note = zone_note(occurred_at=given.occurred_at)
        return out, text.with_zone_note(text.saved(out), out.time_zone_note)
    batch = save.memory_save_batch(
        palace=palace, actor=call.actor, items=[given.item_fields(i) for i in items], source=SOURCE
    )
    rows: list[schemas.SaveItemOut] = []
    for index, item in enumerate(batch.items):
        if isinstance(item, save.ItemError):
            rows.append(schemas.SaveItemOut(index=item.index, disposition="error", error=item.message))
        else:
            rows.append(mapping.save_item(index, item))
    out = schemas.SaveOut(palace=palace.label, count=batch.count, failed=batch.failed, items=rows)
    given_at = {f"items[{i}].occurred_at": item.occurred_at for i, item in enumerate(items)}
    out.time_zone_note = zone_note(occurred_at=given.occurred_at, **given_at)
    return out, text.with_zone_note(text.saved(out), out.time_zone_note)


# --- memory_update -------------------------------------------------------------------------------------------------


@tool("memory_update", title="Correct a memory", write=True, idempotent=False)
async def memory_update(
    id: schemas.MemoryId,
    content: schemas.Content,
    placard: Annotated[str | None, Field(max_length=200, description="New placard; omit to keep it.")] = None,
    expected_version: Annotated[
        int | None,
        Field(ge=1, description="The version you read; a stale one fails with a conflict."),
    ] = None,
    reason: Annotated[str, Field(max_length=500, description="Why it changed (kept in the audit log).")] = "",
) -> Annotated[CallToolResult, schemas.UpdateOut]:
    """Correct a memory that is wrong or out of date. The correction becomes a new memory that supersedes the old
    one (same room#slot); the old one keeps its history and no longer appears in default search. Use this instead
    of saving a contradicting memory.

    Returns the new memory (new id, version). Fails with a conflict if someone corrected it first or
    `expected_version` is stale — examine it again and retry.
    Next: nothing, or memory_review to see the supersede chain.
    """
    return await run(
        lambda call: _update(
            call, id=id, content=content, placard=placard, expected_version=expected_version, reason=reason
        )
    )


def _update(
    call: ToolCall, *, id: int, content: str, placard: str | None, expected_version: int | None, reason: str
) -> tuple[schemas.UpdateOut, str]:
    new = lifecycle.memory_update(
        memory_id=id,
        actor=call.actor,
        content=content,
        placard=placard,
        expected_version=expected_version,
        reason=reason,
        source=SOURCE,
    )
    out = schemas.UpdateOut(memory=mapping.memory_row(new, {new.palace_id: new.palace.label}), supersedes=id)
    return out, text.updated(out)


# --- memory_forget -------------------------------------------------------------------------------------------------


@tool("memory_forget", title="Forget a memory", write=True, destructive=True)
async def memory_forget(
    id: schemas.MemoryId,
    reason: Annotated[str, Field(max_length=500, description="The epitaph: why it is forgotten.")] = "",
) -> Annotated[CallToolResult, schemas.ForgetOut]:
    """Forget a memory that is wrong, obsolete or should not be recalled. Soft: it leaves search and the profile,
    keeps its slot in the closed wing with your reason as its epitaph, and a person can restore it.

    Returns the memory's new status. To fix rather than drop a memory, use memory_update.
    Next: memory_audit_forgotten lists what has been forgotten.
    """
    return await run(lambda call: _forget(call, id=id, reason=reason))


def _forget(call: ToolCall, *, id: int, reason: str) -> tuple[schemas.ForgetOut, str]:
    row = lifecycle.memory_forget(memory_id=id, actor=call.actor, reason=reason)
    out = schemas.ForgetOut(id=row.pk, status=row.status, epitaph=row.epitaph, version=row.version)
    return out, text.forgot(out)


# --- memory_restore ------------------------------------------------------------------------------------------------


@tool("memory_restore", title="Restore a forgotten or archived memory", write=True)
async def memory_restore(
    id: schemas.MemoryId,
    reason: Annotated[str, Field(max_length=500, description="Why it comes back (kept in the audit log).")] = "",
) -> Annotated[CallToolResult, schemas.RestoreOut]:
    """Bring a forgotten memory (memory_forget) or one archived by decay back to active: it returns to search and the
    profile in its slot. The result names the status and the epitaph it had.

    Fails with a conflict when the memory is not forgotten or archived (a superseded version comes back with
    memory_checkout instead).
    Next: memory_audit_forgotten lists what is forgotten; memory_search finds the restored memory again.
    """
    return await run(lambda call: _restore(call, id=id, reason=reason))


def _restore(call: ToolCall, *, id: int, reason: str) -> tuple[schemas.RestoreOut, str]:
    try:
        # Read first for the epitaph the restore clears; the service locks the row and checks the write again.
        before = memory_get(user=call.user, memory_id=id, write=True)
    except NotFound:
        raise NotFound(
            f"no memory with id={id} that you can see: check `id` (memory_audit_forgotten lists forgotten memories "
            "with their ids)"
        ) from None
    row = lifecycle.memory_restore(memory_id=id, actor=call.actor, reason=reason)
    out = schemas.RestoreOut(
        memory=mapping.memory_row(row, {row.palace_id: row.palace.label}),
        was=before.status,
        epitaph=before.epitaph,
    )
    return out, text.restored(out)


# --- memory_distill ------------------------------------------------------------------------------------------------


@tool("memory_distill", title="Distill clusters into rules", write=True, destructive=True)
async def memory_distill(
    mode: Annotated[
        Literal["suggest", "apply"], Field(description="suggest: propose only. apply: merge (supersedes members).")
    ] = "suggest",
    project: schemas.Project = None,
    job: Annotated[
        int | None,
        Field(
            ge=1,
            le=2**63 - 1,
            description="A job id this tool returned: its state and, once done, its result (mode and project unused).",
        ),
    ] = None,
) -> Annotated[CallToolResult, schemas.DistillOut]:
    """Consolidate: find clusters of same-topic memories in a palace and merge each into one higher-level rule.
    `suggest` proposes the merges and changes nothing; `apply` writes each rule (by the configured LLM, or an
    extractive rule-based merge — the result says which) and supersedes the members, keeping the chain.

    The work runs on the server's background worker: the answer has a job id and its state. A small run comes back
    done in the same answer (delivery "inline"); otherwise it is "queued": call again with `job` for the result.
    Next: review the suggestions, then call again with mode=apply.
    """
    if job is not None:
        return await run(lambda call: _distill_job(call, job_id=job))
    return await run(lambda call: _distill(call, mode=mode, project=project))


def _distill(call: ToolCall, *, mode: str, project: str | None) -> tuple[schemas.DistillOut, str]:
    palace = call.palace(project)
    # Clustering is quadratic in the palace's memories: the worker does it, this thread only waits a moment.
    started = distill_job_wait(job=distill_job_queue(palace=palace, actor=call.actor, mode=mode))
    delivery = "inline" if started.state in ("done", "failed") else "queued"
    out = mapping.distill_out(job=started, delivery=delivery)
    return out, text.distilled(out)


def _distill_job(call: ToolCall, *, job_id: int) -> tuple[schemas.DistillOut, str]:
    out = mapping.distill_out(job=distill_job_get(user=call.user, job_id=job_id), delivery="lookup")
    return out, text.distilled(out)
