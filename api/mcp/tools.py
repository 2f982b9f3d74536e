"""MCP tools: thin adapters over the memory services. The user always comes from the verified token.

Each tool is an `async def` that hands a sync body to `run_tool` (api/mcp/base.py), which loads the caller, refuses
write tools to read tokens, runs the body on the request's ORM thread and maps domain errors to isError results.
Tool names are a public contract (`memory_<verb>`); descriptions are written for the model that calls them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from django.conf import settings
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from accounts.caller import Caller
from api.mcp import rendering, schemas
from api.mcp.base import run_tool
from api.mcp.context import palace_for
from api.mcp.server import WRITE_TOOLS, mcp
from memory import pipeline as memory_pipeline
from memory import selectors as memory_selectors
from memory import services as memory_services
from memory.evidence import NEXT_STRATEGIES, evidence_assess, qualify_ref
from memory.jobs import distill_run
from memory.models import Edge, Memory
from memory.profile import profile_build
from memory.search import memory_search
from memory.walks import neighbours as walk_neighbours
from memory.walks import tour_fixed, tour_thematic
from memory.wrapping import wrap_memory_context
from palace.errors import InvalidInput, NotFound
from palace.selectors import palaces_readable
from review.selectors import memory_overview, review_due_count, review_queue
from review.services import review_grade

SOURCE = "mcp"
MAX_EXAMINE = 16
MAX_SEARCH_LIMIT = 50


def tool(name: str, *, title: str, destructive: bool = False, idempotent: bool = False) -> Any:
    """Register an async tool under its public name, annotated read-only unless it is a write tool."""
    write = name in WRITE_TOOLS
    annotations = ToolAnnotations(
        title=title,
        read_only_hint=not write,
        destructive_hint=destructive if write else None,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )
    return mcp.tool(name=name, title=title, annotations=annotations)


def _labels(caller: Caller) -> dict[int, str]:
    return {p.pk: p.label for p in palaces_readable(user=caller.user)}


def _token_id(caller: Caller) -> int | None:
    return caller.token.pk if caller.token is not None else None


# --- memory_save ---------------------------------------------------------------------------------------------------


def _save(
    caller: Caller,
    *,
    content: str | None,
    kind: str | None,
    placard: str,
    project: str | None,
    items: list[schemas.SaveItem] | None,
) -> tuple[schemas.SaveOut, str]:
    if (content is None) == (items is None):
        raise InvalidInput("pass either `content` with `kind`, or `items` (1–10 objects with content and kind)")
    if content is not None and kind is None:
        raise InvalidInput("`kind` is required with `content`: fact, preference, decision, episode or skill")
    palace = palace_for(caller, project=project, write=True)
    if items is None:
        assert content is not None
        assert kind is not None
        result = memory_pipeline.memory_save(
            palace=palace, actor=caller.actor, content=content, kind=kind, placard=placard, source=SOURCE
        )
        out = schemas.SaveOut(palace=palace.label, count=1, failed=0, items=[rendering.save_item(0, result)])
        return out, rendering.save_text(out)
    batch = memory_pipeline.memory_save_batch(
        palace=palace, actor=caller.actor, items=[i.model_dump() for i in items], source=SOURCE
    )
    rows: list[schemas.SaveItemOut] = []
    for index, item in enumerate(batch.items):
        if isinstance(item, memory_pipeline.ItemError):
            rows.append(schemas.SaveItemOut(index=item.index, disposition="error", error=item.message))
        else:
            rows.append(rendering.save_item(index, item))
    out = schemas.SaveOut(palace=palace.label, count=batch.count, failed=batch.failed, items=rows)
    return out, rendering.save_text(out)


@tool("memory_save", title="Save memories")
async def memory_save(
    content: Annotated[
        str | None, Field(max_length=settings.ATRIUM_MAX_CONTENT_CHARS, description="The memory, one idea.")
    ] = None,
    kind: Annotated[
        schemas.Kind | None,
        Field(description="fact | preference | decision | episode | skill (required with `content`)."),
    ] = None,
    placard: Annotated[str, Field(max_length=200, description="Optional short cue: unique, distinctive, dated.")] = "",
    project: schemas.Project = None,
    items: Annotated[
        list[schemas.SaveItem] | None,
        Field(min_length=1, max_length=10, description="Instead of `content`: up to 10 {content, kind, placard}."),
    ] = None,
) -> Annotated[CallToolResult, schemas.SaveOut]:
    """Save durable knowledge to long-term memory: facts, preferences, decisions, episodes (what happened) and
    skills (how to do something). Use it when you learn something worth knowing in a later session; one idea per
    memory. Pass `content` + `kind` for one memory, or `items` (≤ 10) for several.

    Returns each item's disposition: accept (new memory, with its id and room#slot), merge (a restatement that
    reinforced an existing memory), defer (saved, but it may contradict the listed memories — review them), drop
    (no information, nothing stored). Secrets are redacted before storage. Saves go to your personal palace unless
    `project` names a project palace you may write.
    Next: if an item may contradict another, call memory_review on it; to correct a memory use memory_update.
    """
    return await run_tool(
        "memory_save",
        _save,
        write=True,
        content=content,
        kind=kind,
        placard=placard,
        project=project,
        items=items,
    )


# --- memory_search -------------------------------------------------------------------------------------------------


def _search(
    caller: Caller,
    *,
    query: str,
    room: str | None,
    kind: str | None,
    as_of: datetime | None,
    project: str | None,
    limit: int,
) -> tuple[schemas.SearchOut, str]:
    palace_ids = [palace_for(caller, project=project).pk] if project else None
    result = memory_search(
        user=caller.user,
        query=query,
        palace_ids=palace_ids,
        kind=kind,
        room=room or None,
        as_of=as_of,
        limit=limit,
        token_id=_token_id(caller),
    )
    labels = rendering.palace_labels(h.memory.palace_id for h in result.hits)
    hits = []
    for hit in result.hits:
        row = rendering.memory_row(hit.memory, labels)
        hits.append(
            schemas.SearchHit(
                id=row.id,
                ref=qualify_ref(result.batch, hit.ref) if result.batch else hit.ref,
                label=hit.label,
                score=hit.score,
                kind=row.kind,
                coordinate=row.coordinate,
                palace=row.palace,
                placard=row.placard,
                content=row.content,
                content_truncated=row.content_truncated,
                occurred_at=row.occurred_at,
                cues=list(hit.cues),
            )
        )
    out = schemas.SearchOut(
        query=query,
        mode=result.mode,  # type: ignore[arg-type]
        degraded=list(result.degraded),
        common_words=list(result.common_words),
        batch_id=result.batch,
        hits=hits,
    )
    return out, rendering.search_text(out)


@tool("memory_search", title="Search memories")
async def memory_search_tool(
    query: Annotated[str, Field(min_length=1, max_length=2000, description="What you want to recall.")],
    room: Annotated[
        str | None, Field(max_length=120, description="Search inside one room (see memory_stats), e.g. 'Fact Hall'.")
    ] = None,
    kind: Annotated[schemas.Kind | None, Field(description="Only this kind.")] = None,
    as_of: Annotated[
        datetime | None, Field(description="Point in time (ISO 8601): only memories that had happened by then.")
    ] = None,
    project: schemas.Project = None,
    limit: Annotated[int, Field(ge=1, le=MAX_SEARCH_LIMIT, description="How many hits (1–50).")] = 10,
) -> Annotated[CallToolResult, schemas.SearchOut]:
    """Recall memories relevant to a question, before you answer from memory. Hybrid keyword + semantic search
    over your personal palace and the project palaces you belong to (or one `project`).

    Each row carries id= (for other tools) and ref= (evidence for memory_assess), how it was found (`sem#2 + lex#1`)
    and its room#slot; the header says what ran ("hybrid" only when both arms did; a degraded marker otherwise), and
    the tail gives the evidence batch id. A hit means relevant, not sufficient.
    Next: memory_assess with the batch id and the refs that answer the question; memory_examine for full text.
    """
    return await run_tool(
        "memory_search",
        _search,
        write=False,
        query=query,
        room=room,
        kind=kind,
        as_of=as_of,
        project=project,
        limit=limit,
    )


# --- memory_assess -------------------------------------------------------------------------------------------------


def _assess(
    caller: Caller,
    *,
    batch_id: str,
    evidence_refs: list[str],
    adequate: bool,
    next_strategy: str,
    missing: list[str],
) -> tuple[schemas.AssessOut, str]:
    verdict = evidence_assess(
        user=caller.user,
        actor=caller.actor,
        batch=batch_id,
        evidence_refs=evidence_refs,
        adequate=adequate,
        next_strategy=next_strategy,
        missing=missing,
    )
    out = schemas.AssessOut(
        batch_id=verdict.batch,
        verdict=verdict.verdict,  # type: ignore[arg-type]
        next_strategy=verdict.next_strategy,
        claimed_adequate=verdict.claimed_adequate,
        claimed_strategy=verdict.claimed_strategy,
        valid_refs=verdict.valid_refs,
        memory_ids=verdict.memory_ids,
        rejected_refs=[schemas.RejectedRefOut(ref=r.ref, reason=r.reason) for r in verdict.rejected],
        missing=verdict.missing,
        reasons=verdict.reasons,
    )
    return out, rendering.assess_text(out)


@tool("memory_assess", title="Assess evidence")
async def memory_assess(
    batchId: Annotated[str, Field(min_length=1, max_length=64, description="batch= from a search.")],
    evidenceRefs: Annotated[
        list[Annotated[str, Field(max_length=64)]],
        Field(max_length=8, description="Up to 8 ref= values from THAT batch's rows."),
    ],
    adequate: Annotated[bool, Field(description="Your claim: the cited evidence answers the question.")],
    nextStrategy: Annotated[
        Literal["answer", "retrieve", "ask_user"],
        Field(description="answer | retrieve | ask_user"),
    ],
    missing: Annotated[
        list[Annotated[str, Field(max_length=500)]],
        Field(max_length=8, description="What is still missing, if anything."),
    ] = [],  # noqa: B006 (pydantic copies defaults)
) -> Annotated[CallToolResult, schemas.AssessOut]:
    """Evidence gate: before answering from memory, check whether one search's results suffice. Cite the refs
    (ref= values) from that search's rows that answer the question, say whether you think they are adequate, what
    is missing, and your next strategy.

    The verdict is decided by rule, not by your claim: `sufficient` only if you claim adequacy, at least one cited
    ref belongs to that batch, and nextStrategy is `answer`; otherwise `insufficient` with the strategy rewritten to
    `retrieve`. Refs from other batches are rejected and listed. Every verdict is recorded in the audit log.
    Next: answer if sufficient; otherwise search again (another query, room or project).
    """
    assert set(NEXT_STRATEGIES) == {"answer", "retrieve", "ask_user"}
    return await run_tool(
        "memory_assess",
        _assess,
        write=False,
        batch_id=batchId,
        evidence_refs=list(evidenceRefs),
        adequate=adequate,
        next_strategy=nextStrategy,
        missing=list(missing),
    )


# --- memory_timeline -----------------------------------------------------------------------------------------------


def _timeline(
    caller: Caller, *, order: str, kind: str | None, project: str | None, limit: int, cursor: str | None, offset: int
) -> tuple[schemas.TimelineOut, str]:
    palace = palace_for(caller, project=project)
    labels = {palace.pk: palace.label}
    if order == "tour":
        tour = tour_fixed(palace=palace, offset=offset, limit=limit)
        stops = [s for s in tour.stops if kind is None or (s.memory is not None and s.memory.kind == kind)]
        rows = [
            schemas.TimelineRow(
                seq=s.seq,
                coordinate=s.coordinate,
                memory=rendering.memory_row(s.memory, labels) if s.memory is not None else None,
            )
            for s in stops
        ]
        out = schemas.TimelineOut(order="tour", palace=palace.label, rows=rows, total=tour.total)
        more = offset + limit < tour.total
        tail = f"More stops: call again with offset={offset + limit}." if more else ""
        lines = [
            f"{r.seq}. " + (rendering.row_line(r.memory) if r.memory else f"[{r.coordinate}] (empty)") for r in rows
        ]
        title = f"Tour of {palace.label} in route order (stops {offset + 1}–{offset + len(rows)} of {tour.total}):"
        return out, rendering.rows_text(title, lines, empty="No stops on the route yet.", tail=tail)
    page = memory_selectors.memory_list(user=caller.user, palaces=[palace], kind=kind, cursor=cursor, limit=limit)
    rows = [
        schemas.TimelineRow(coordinate=rendering.coordinate_of(m), memory=rendering.memory_row(m, labels))
        for m in page.items
    ]
    out = schemas.TimelineOut(order="created", palace=palace.label, rows=rows, next_cursor=page.next_cursor)
    lines = [f"{r.memory.created_at:%Y-%m-%d %H:%M} " + rendering.row_line(r.memory) for r in rows if r.memory]
    tail = f"Older: call again with cursor={page.next_cursor}." if page.next_cursor else ""
    return out, rendering.rows_text(
        f"Timeline of {palace.label}, newest first:", lines, empty="No memories yet.", tail=tail
    )


@tool("memory_timeline", title="Browse the timeline")
async def memory_timeline(
    order: Annotated[
        Literal["created", "tour"],
        Field(description="created: newest first. tour: the palace's fixed route, with room#slot coordinates."),
    ] = "created",
    kind: Annotated[schemas.Kind | None, Field(description="Only this kind.")] = None,
    project: schemas.Project = None,
    limit: Annotated[int, Field(ge=1, le=100, description="Rows per page (1–100).")] = 20,
    cursor: Annotated[str | None, Field(max_length=200, description="From a previous page (created order).")] = None,
    offset: Annotated[int, Field(ge=0, le=1_000_000, description="Stops to skip (tour order).")] = 0,
) -> Annotated[CallToolResult, schemas.TimelineOut]:
    """Browse a palace's memories in order rather than by relevance: by creation time (newest first), or along the
    palace's fixed tour route (slot order, each row with its room#slot and route position) to re-walk the palace.
    Use it to see what was recorded recently or to review a palace systematically.

    Returns rows with id=, room#slot, kind, placard and a snippet; a cursor (created) or offset (tour) for more.
    Next: memory_examine ids for full text; memory_neighbors to walk from one memory.
    """
    return await run_tool(
        "memory_timeline",
        _timeline,
        write=False,
        order=order,
        kind=kind,
        project=project,
        limit=limit,
        cursor=cursor,
        offset=offset,
    )


# --- memory_update / memory_forget / memory_report -----------------------------------------------------------------


def _update(
    caller: Caller, *, id: int, content: str, placard: str | None, expected_version: int | None, reason: str
) -> tuple[schemas.UpdateOut, str]:
    new = memory_services.memory_update(
        memory_id=id,
        actor=caller.actor,
        content=content,
        placard=placard,
        expected_version=expected_version,
        reason=reason,
        source=SOURCE,
    )
    row = rendering.memory_row(new, {new.palace_id: new.palace.label})
    out = schemas.UpdateOut(memory=row, supersedes=id)
    text = (
        f"Corrected: id={new.pk} (version {new.version}) supersedes #{id} at {row.coordinate or 'unslotted'}. "
        f"#{id} keeps its history and leaves default search."
    )
    return out, text


@tool("memory_update", title="Correct a memory", idempotent=False)
async def memory_update(
    id: schemas.MemoryId,
    content: Annotated[str, Field(min_length=1, max_length=settings.ATRIUM_MAX_CONTENT_CHARS)],
    placard: Annotated[str | None, Field(max_length=200, description="New placard; omit to keep it.")] = None,
    expectedVersion: Annotated[
        int | None,
        Field(ge=1, description="The version you read; a stale one fails with a conflict."),
    ] = None,
    reason: Annotated[str, Field(max_length=500, description="Why it changed (kept in the audit log).")] = "",
) -> Annotated[CallToolResult, schemas.UpdateOut]:
    """Correct a memory that is wrong or out of date. The correction becomes a new memory that supersedes the old
    one (same room#slot); the old one keeps its history and no longer appears in default search. Use this instead
    of saving a contradicting memory.

    Returns the new memory (new id, version). Fails with a conflict if someone corrected it first or
    `expectedVersion` is stale — examine it again and retry.
    Next: nothing, or memory_review to see the supersede chain.
    """
    return await run_tool(
        "memory_update",
        _update,
        write=True,
        id=id,
        content=content,
        placard=placard,
        expected_version=expectedVersion,
        reason=reason,
    )


def _forget(caller: Caller, *, id: int, reason: str) -> tuple[schemas.ForgetOut, str]:
    row = memory_services.memory_forget(memory_id=id, actor=caller.actor, reason=reason)
    out = schemas.ForgetOut(id=row.pk, status=row.status, epitaph=row.epitaph, version=row.version)
    return out, f"Forgot #{row.pk} (restorable; it keeps its slot in the closed wing). Epitaph: {row.epitaph or '—'}"


@tool("memory_forget", title="Forget a memory", destructive=True)
async def memory_forget(
    id: schemas.MemoryId,
    reason: Annotated[str, Field(max_length=500, description="The epitaph: why it is forgotten.")] = "",
) -> Annotated[CallToolResult, schemas.ForgetOut]:
    """Forget a memory that is wrong, obsolete or should not be recalled. Soft: it leaves search and the profile,
    keeps its slot in the closed wing with your reason as its epitaph, and a person can restore it.

    Returns the memory's new status. To fix rather than drop a memory, use memory_update.
    Next: memory_audit_forgotten lists what has been forgotten.
    """
    return await run_tool("memory_forget", _forget, write=True, id=id, reason=reason)


def _report(
    caller: Caller, *, id: int, outcome: str | None, grade: int | None, note: str
) -> tuple[schemas.ReportOut, str]:
    if (outcome is None) == (grade is None):
        raise InvalidInput("pass exactly one of `outcome` (success | failure) or `grade` (0–5)")
    if outcome is not None:
        row = memory_services.memory_report(memory_id=id, actor=caller.actor, outcome=outcome, note=note)
        out = schemas.ReportOut(id=row.pk, recorded="outcome", outcome=outcome, confidence=row.confidence)
        return out, f"Recorded {outcome} for #{row.pk}: confidence now {row.confidence:.2f}."
    assert grade is not None
    card = review_grade(memory_id=id, grade=grade, actor=caller.actor)
    out = schemas.ReportOut(
        id=id,
        recorded="grade",
        grade=grade,
        next_due_at=card.due_at,
        interval_days=card.interval_days,
        repetitions=card.repetitions,
    )
    return out, f"Graded #{id} {grade}/5: next review {card.due_at:%Y-%m-%d} (in {card.interval_days} day(s))."


@tool("memory_report", title="Report an outcome or grade a recall")
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
    return await run_tool("memory_report", _report, write=True, id=id, outcome=outcome, grade=grade, note=note)


# --- memory_review_queue / memory_review ---------------------------------------------------------------------------


def _queue(caller: Caller, *, project: str | None, limit: int) -> tuple[schemas.QueueOut, str]:
    palace_ids = [palace_for(caller, project=project).pk] if project else None
    items = review_queue(user=caller.user, palace_ids=palace_ids, limit=limit)
    reviews_due = review_due_count(user=caller.user, palace_ids=palace_ids)
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
    out = schemas.QueueOut(due=reviews_due, items=rows)
    lines = [
        f"- id={r.id} [{r.coordinate or 'unslotted'}] {r.kind} · {r.placard or '(no placard)'} — "
        f"{r.days_overdue} day(s) overdue"
        for r in rows
    ]
    text = rendering.rows_text(
        f"Reviews due: {reviews_due}. Recall each from its cue first (bodies are hidden on purpose):",
        lines,
        empty="Nothing is due.",
        tail="Then memory_examine the id to check yourself, and memory_report it with a grade 0–5." if rows else "",
    )
    return out, text


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
    return await run_tool("memory_review_queue", _queue, write=False, project=project, limit=limit)


def _audit(caller: Caller, *, id: int) -> tuple[schemas.AuditOut, str]:
    memory = memory_selectors.memory_get(user=caller.user, memory_id=id)
    labels = {memory.palace_id: memory.palace.label}
    history = memory_selectors.memory_chain(memory=memory)
    chain = history.newest_first
    contradictions = []
    for edge in memory_selectors.memory_edges(memory=memory, kind=Edge.Kind.CONTRADICTS, limit=None):
        out_going = edge.from_memory_id == id
        other = edge.to_memory if out_going else edge.from_memory
        contradictions.append(
            schemas.EdgeOut(
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
        for o in memory_selectors.memory_ops(chain=history)
    ]
    row = rendering.memory_row(memory, labels, max_chars=None)
    out = schemas.AuditOut(
        memory=row,
        sources=[dict(s) for s in memory.sources],
        supersede_chain=[rendering.memory_row(m, labels) for m in chain],
        contradictions=contradictions,
        oplog=oplog,
    )
    lines = [rendering.row_line(row), f"Sources ({len(out.sources)}):"]
    lines += [
        "  - " + ", ".join(f"{k}={v}" for k, v in source.items() if v not in (None, "")) for source in out.sources
    ]
    lines.append(f"Supersede chain (newest first): {' → '.join(f'#{m.id} ({m.status})' for m in out.supersede_chain)}")
    lines.append(f"Contradictions ({len(contradictions)}):")
    lines += [f"  - #{c.other_id} ({c.other_status}) {c.status} · {c.other_placard}" for c in contradictions]
    lines.append(f"Op log ({len(oplog)}):")
    lines += [f"  - {o.at:%Y-%m-%d %H:%M} {o.op} by {o.actor} on #{o.target_id} {o.reason}".rstrip() for o in oplog]
    return out, wrap_memory_context("\n".join(lines))


@tool("memory_review", title="Audit one memory")
async def memory_review(id: schemas.MemoryId) -> Annotated[CallToolResult, schemas.AuditOut]:
    """Audit one memory before trusting or changing it: its full text, where it came from (every source it
    absorbed), its supersede chain (corrections, newest first), the memories it may contradict, and the operation
    log of every change.

    Use it when a save reported a possible contradiction, or when a memory looks doubtful.
    Next: memory_update to correct it, memory_forget to drop it, or memory_report its outcome.
    """
    return await run_tool("memory_review", _audit, write=False, id=id)


# --- memory_stats --------------------------------------------------------------------------------------------------


def _stats(caller: Caller, *, project: str | None) -> tuple[schemas.StatsOut, str]:
    palace = palace_for(caller, project=project)
    overview = memory_overview(user=caller.user, palaces=[palace], rooms=True)
    stats, reviews_due = overview.stats, overview.reviews_due
    rooms = [
        schemas.RoomOut(
            name=r.name,
            kind=r.kind,
            capacity=r.capacity,
            slots_used=r.slots_used,
            active=r.active,
            latest_placard=r.latest_placard,
        )
        for r in overview.rooms
    ]
    out = schemas.StatsOut(
        palace=palace.label,
        total=stats.total,
        by_status=stats.by_status,
        by_kind=stats.by_kind,
        without_vector=stats.without_vector,
        unslotted=stats.unslotted,
        review_enrolled=stats.review_enrolled,
        reviews_due=reviews_due,
        pending_contradictions=stats.pending_contradictions,
        created_last_7_days=stats.created_last_7_days,
        signal_ratio=stats.signal_ratio,
        signal_reason=stats.signal_reason,
        rooms=rooms,
    )
    ratio = "unknown" if stats.signal_ratio is None else f"{stats.signal_ratio:.0%}"
    lines = [
        f"Palace {palace.label}: {stats.total} memories "
        + ", ".join(f"{k} {v}" for k, v in stats.by_status.items() if v),
        "Active by kind: " + ", ".join(f"{k} {v}" for k, v in stats.by_kind.items()),
        f"Signal ratio: {ratio} ({stats.signal_reason}). Reviews due: {reviews_due}. "
        f"Pending contradictions: {stats.pending_contradictions}. Without vector: {stats.without_vector}.",
        "Room directory (search inside one with memory_search room=…):",
    ]
    lines += [
        f"- {r.name} ({r.kind}): {r.slots_used}/{r.capacity} slots, {r.active} active"
        + (f" · latest: {r.latest_placard}" if r.latest_placard else "")
        for r in rooms
    ] or ["- no rooms yet"]
    return out, "\n".join(lines)


@tool("memory_stats", title="Palace statistics and room directory")
async def memory_stats(project: schemas.Project = None) -> Annotated[CallToolResult, schemas.StatsOut]:
    """Statistics of a palace (personal, or `project`): memories by status and kind, the signal ratio (share of
    active memories ever retrieved; "unknown" when there are none), reviews due, pending contradictions, memories
    still without a vector, and the room directory (rooms with slots used and latest placard).

    Use it to orient yourself, and to pick a room before a routed search.
    Next: memory_search with room=…, or memory_tour.
    """
    return await run_tool("memory_stats", _stats, write=False, project=project)


# --- memory_examine / memory_neighbors -----------------------------------------------------------------------------


def _examine(caller: Caller, *, ids: list[int]) -> tuple[schemas.ExamineOut, str]:
    labels = _labels(caller)
    found = memory_selectors.memories_by_id(palace_ids=list(labels), ids=ids)
    unique = list(dict.fromkeys(ids))
    rows = [rendering.memory_row(found[i], labels, max_chars=None) for i in unique if i in found]
    missing = [i for i in unique if i not in found]
    out = schemas.ExamineOut(memories=rows, not_found=missing)
    lines = [rendering.row_line(r) + f" (v{r.version}, confidence {r.confidence:.2f})" for r in rows]
    tail = f"Not found (or not yours to read): {', '.join(f'#{i}' for i in missing)}" if missing else ""
    return out, rendering.rows_text(f"{len(rows)} memory(ies):", lines, empty="None found.", tail=tail)


@tool("memory_examine", title="Examine memories by id")
async def memory_examine(
    ids: Annotated[
        list[schemas.MemoryId], Field(min_length=1, max_length=MAX_EXAMINE, description="Up to 16 memory ids.")
    ],
) -> Annotated[CallToolResult, schemas.ExamineOut]:
    """Read memories in full by id (up to 16 at once): whole body, placard, room#slot, status, version and
    confidence. Use it after memory_search, memory_timeline or memory_review_queue when a snippet or cue is not
    enough. Ids you may not read are reported as not found, exactly like ids that do not exist.

    Next: memory_update with the version you read to correct one; memory_neighbors to walk from one.
    """
    return await run_tool("memory_examine", _examine, write=False, ids=list(ids))


def _neighbours(caller: Caller, *, id: int, hops: int, limit: int) -> tuple[schemas.NeighboursOut, str]:
    memory = memory_selectors.memory_get(user=caller.user, memory_id=id)
    labels = {memory.palace_id: memory.palace.label}
    found = walk_neighbours(memory=memory, hops=hops, limit=limit)
    origin = rendering.memory_row(memory, labels)
    rows = [
        schemas.NeighbourOut(
            hops=n.hops,
            via=n.via,
            direction=n.direction,
            from_id=n.from_id,
            memory=rendering.memory_row(n.memory, labels),
        )
        for n in found
    ]
    out = schemas.NeighboursOut(origin=origin, neighbours=rows)
    lines = [
        f"- {n.hops} hop(s) via {n.via} ({'from' if n.direction == 'out' else 'to'} #{n.from_id}): "
        + rendering.row_line(n.memory)
        for n in rows
    ]
    return out, rendering.rows_text(
        "From " + rendering.row_line(origin), lines, empty="No related memories within reach."
    )


@tool("memory_neighbors", title="Walk the corridor from a memory")
async def memory_neighbors(
    id: schemas.MemoryId,
    hops: Annotated[int, Field(ge=1, le=3, description="How far to walk over relation edges (1–3).")] = 1,
    limit: Annotated[int, Field(ge=1, le=200)] = 20,
) -> Annotated[CallToolResult, schemas.NeighboursOut]:
    """Walk the corridor: memories related to one memory through its edges (next turn, supports, refines,
    related, contradicts, supersedes, derived from), 1–3 hops out, nearest first.

    Use it to gather context around a hit (what came before/after, what supports or contradicts it).
    Next: memory_examine the ids you need in full.
    """
    return await run_tool("memory_neighbors", _neighbours, write=False, id=id, hops=hops, limit=limit)


# --- memory_tour / memory_audit_forgotten --------------------------------------------------------------------------


def _tour(
    caller: Caller, *, mode: str, theme: str, stops: int, project: str | None, offset: int, limit: int
) -> tuple[schemas.TourOut, str]:
    palace = palace_for(caller, project=project)
    labels = {palace.pk: palace.label}
    if mode == "thematic":
        tour = tour_thematic(user=caller.user, palace=palace, theme=theme, stops=stops)
    else:
        tour = tour_fixed(palace=palace, offset=offset, limit=limit)
    rows = [
        schemas.TourStopOut(
            seq=s.seq,
            coordinate=s.coordinate,
            memory=rendering.memory_row(s.memory, labels) if s.memory is not None else None,
        )
        for s in tour.stops
    ]
    out = schemas.TourOut(
        mode=tour.mode,  # type: ignore[arg-type]
        palace=palace.label,
        theme=tour.theme,
        total=tour.total,
        stops=rows,
        search_mode=tour.search_mode,
        degraded=list(tour.degraded),
        note=tour.note,
    )
    title = (
        f'Thematic tour of {palace.label} around "{tour.theme}" ({tour.search_mode} search'
        + (f", degraded: {', '.join(tour.degraded)}" if tour.degraded else "")
        + "):"
        if mode == "thematic"
        else f"Fixed tour of {palace.label} ({tour.total} stops):"
    )
    lines = [f"{r.seq}. " + (rendering.row_line(r.memory) if r.memory else f"[{r.coordinate}] (empty)") for r in rows]
    return out, rendering.rows_text(title, lines, empty="No stops.", tail=tour.note)


@tool("memory_tour", title="Tour the palace")
async def memory_tour(
    mode: Annotated[
        Literal["fixed", "thematic"],
        Field(description="fixed: the whole palace in route order. thematic: 3–7 stops around `theme`."),
    ] = "fixed",
    theme: Annotated[str, Field(max_length=500, description="Required for thematic tours.")] = "",
    stops: Annotated[int, Field(ge=3, le=7, description="Thematic stops (3–7).")] = 5,
    project: schemas.Project = None,
    offset: Annotated[int, Field(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Field(ge=1, le=500)] = 50,
) -> Annotated[CallToolResult, schemas.TourOut]:
    """Walk a palace in a stable order. `fixed` follows the palace's route slot by slot (the same order every time,
    good for sequential review); `thematic` plans 3–7 stops about a theme and visits them in route order.

    Returns stops with their route position, room#slot and memory.
    Next: memory_examine for full text, memory_neighbors from a stop.
    """
    return await run_tool(
        "memory_tour",
        _tour,
        write=False,
        mode=mode,
        theme=theme,
        stops=stops,
        project=project,
        offset=offset,
        limit=limit,
    )


def _forgotten(
    caller: Caller, *, project: str | None, limit: int, cursor: str | None
) -> tuple[schemas.ForgottenOut, str]:
    palace = palace_for(caller, project=project)
    labels = {palace.pk: palace.label}
    page = memory_selectors.memory_list(
        user=caller.user, palaces=[palace], status=Memory.Status.FORGOTTEN, cursor=cursor, limit=limit
    )
    rows = [rendering.memory_row(m, labels) for m in page.items]
    epitaphs = {m.pk: m.epitaph for m in page.items}
    out = schemas.ForgottenOut(palace=palace.label, memories=rows, next_cursor=page.next_cursor)
    lines = [rendering.row_line(r) + f" — epitaph: {epitaphs[r.id] or '(none given)'}" for r in rows]
    tail = f"Older: call again with cursor={page.next_cursor}." if page.next_cursor else ""
    return out, rendering.rows_text(
        f"The closed wing of {palace.label} (forgotten memories, newest first):",
        lines,
        empty="Nothing has been forgotten.",
        tail=tail,
    )


@tool("memory_audit_forgotten", title="The closed wing")
async def memory_audit_forgotten(
    project: schemas.Project = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 20,
    cursor: Annotated[str | None, Field(max_length=200)] = None,
) -> Annotated[CallToolResult, schemas.ForgottenOut]:
    """The closed wing: recently forgotten memories of a palace with their epitaphs (why they were forgotten), so
    you can check that past forgetting was sound. Forgotten memories keep their slots and can be restored by a
    person in the panel or the REST API.

    Next: if something was forgotten wrongly, save it again (memory_save) or ask the user to restore it.
    """
    return await run_tool(
        "memory_audit_forgotten", _forgotten, write=False, project=project, limit=limit, cursor=cursor
    )


# --- memory_distill ------------------------------------------------------------------------------------------------


def _distill(caller: Caller, *, mode: str, project: str | None) -> tuple[schemas.DistillOut, str]:
    palace = palace_for(caller, project=project, write=True)
    result = distill_run(mode=mode, palace=palace, actor=caller.actor)
    clusters = [
        schemas.DistillClusterOut(
            kind=c.kind,
            member_ids=list(c.member_ids),
            min_similarity=c.min_similarity,
            content=c.content,
            placard=c.placard,
            producer=c.producer,
            fallback=c.fallback,
            confidence=c.confidence,
            rule_id=c.rule_id,
            skipped=c.skipped,
        )
        for c in result.clusters
    ]
    out = schemas.DistillOut(
        mode=result.mode,  # type: ignore[arg-type]
        palace=palace.label,
        llm_configured=result.llm_configured,
        applied=result.applied,
        clusters=clusters,
    )
    verb = "Proposed" if mode == "suggest" else "Applied"
    lines = [f"{verb} {len(clusters)} cluster(s) in {palace.label} (LLM configured: {result.llm_configured}):"]
    for c in clusters:
        line = f"- {c.kind} {', '.join(f'#{i}' for i in c.member_ids)} → {c.content!r} (by {c.producer}"
        line += f"; {c.fallback})" if c.fallback else ")"
        if c.rule_id is not None:
            line += f" = new rule id={c.rule_id}"
        if c.skipped:
            line += f" skipped: {c.skipped}"
        lines.append(line)
    if not clusters:
        lines.append("Nothing to merge.")
    elif mode == "suggest":
        lines.append("Call again with mode=apply to merge them (each rule supersedes its members).")
    return out, "\n".join(lines)


@tool("memory_distill", title="Distill clusters into rules", destructive=True)
async def memory_distill(
    mode: Annotated[
        Literal["suggest", "apply"], Field(description="suggest: propose only. apply: merge (supersedes members).")
    ] = "suggest",
    project: schemas.Project = None,
) -> Annotated[CallToolResult, schemas.DistillOut]:
    """Consolidate: find clusters of same-topic memories in a palace and merge each into one higher-level rule.
    `suggest` proposes the merges and changes nothing; `apply` writes each rule (by the configured LLM, or an
    extractive rule-based merge — the result says which) and supersedes the members, keeping the chain.

    Next: review the suggestions, then call again with mode=apply.
    """
    return await run_tool("memory_distill", _distill, write=True, mode=mode, project=project)


# --- memory_profile and atrium://profile ---------------------------------------------------------------------------


def profile_for(caller: Caller) -> schemas.ProfileOut:
    palace = palace_for(caller, project=None)
    reviews_due = review_due_count(user=caller.user)
    profile = profile_build(user=caller.user, palace_id=palace.pk, reviews_due=reviews_due)
    return schemas.ProfileOut(
        text=profile.text,
        tokens=profile.tokens,
        budget=profile.budget,
        curated=profile.curated,
        lines=[
            schemas.ProfileLineOut(
                id=line.memory_id,
                coordinate=line.coordinate,
                kind=line.kind,
                placard=line.placard,
                body=line.body,
                indexed=line.indexed,
                truncated=line.truncated,
            )
            for line in profile.lines
        ],
        more=profile.more,
        reviews_due=profile.reviews_due,
    )


def _profile(caller: Caller) -> tuple[schemas.ProfileOut, str]:
    out = profile_for(caller)
    return out, out.text


@tool("memory_profile", title="Your standing profile")
async def memory_profile() -> Annotated[CallToolResult, schemas.ProfileOut]:
    """The grand hall: your standing profile — the curated profile text first (if any), then the top memories of
    your personal palace, each with its room#slot, within a fixed token budget; entries that do not fit are listed
    as #id lines and counted as "+N more"; a line says how many reviews are due. The same text is the resource
    atrium://profile and GET /api/v1/profile.txt (for session-start hooks).

    Use it at the start of a session to know who you work for and what they prefer.
    Next: memory_search for anything specific; memory_examine #ids.
    """
    return await run_tool("memory_profile", _profile, write=False)


@mcp.resource(
    "atrium://profile",
    name="profile",
    title="Standing profile",
    description="Your standing profile (the grand hall), wrapped in <atrium_memory_context>, within its token budget.",
    mime_type="text/plain",
)
async def profile_resource() -> str:
    try:
        result = await run_tool("memory_profile", _profile, write=False)
    except ToolError as exc:
        raise ResourceError(str(exc)) from None
    structured = result.structured_content or {}
    text = structured.get("text") if isinstance(structured, dict) else None
    if not isinstance(text, str):  # pragma: no cover - the profile always renders text
        raise NotFound("profile unavailable")
    return text


__all__ = ["ToolError", "profile_for"]
