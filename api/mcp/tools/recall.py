"""Tools that recall: memory_search, memory_assess, memory_examine, memory_profile (and atrium://profile)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult
from pydantic import Field

from accounts.usersettings import search_fallback_choose
from api.mcp import mapping, schemas, text
from api.mcp.registry import resource, tool
from api.mcp.runner import ToolCall, run
from api.schemas import FALLBACK_HELP, FallbackName, Instant, zone_note
from memory.context import curated_block, standing_profile_build
from memory.search import SearchRequest, evidence_assess, memory_search
from memory.selectors import memories_by_id, open_contradictions
from palace.errors import NotFound
from palace.selectors import palace_labels
from review.selectors import review_due_count

MAX_EXAMINE = 16
MAX_SEARCH_LIMIT = 50


# --- memory_search -------------------------------------------------------------------------------------------------


@tool("memory_search", title="Search memories")
async def memory_search_tool(
    query: Annotated[str, Field(min_length=1, max_length=2000, description="What you want to recall.")],
    room: Annotated[
        str | None, Field(max_length=120, description="Search inside one room (see memory_stats), e.g. 'Fact Hall'.")
    ] = None,
    kind: Annotated[schemas.Kind | None, Field(description="Only this kind.")] = None,
    as_of: Annotated[
        Instant | None,
        Field(
            description="Point in time (ISO 8601): the memories as they stood then — the version current then, not "
            "today's correction; nothing that happened later. Hits carry their entities' facts true then."
        ),
    ] = None,
    known_at: Annotated[
        Instant | None,
        Field(description="Record time (ISO 8601): only what Atrium had recorded by then, as it stood then."),
    ] = None,
    project: schemas.Project = None,
    limit: Annotated[int, Field(ge=1, le=MAX_SEARCH_LIMIT, description="How many hits (1–50).")] = 10,
    fallback: Annotated[FallbackName | None, Field(description=FALLBACK_HELP)] = None,
) -> Annotated[CallToolResult, schemas.SearchOut]:
    """Recall memories relevant to a question, before you answer from memory. Hybrid keyword + semantic search
    over your personal palace and the project palaces you belong to (or one `project`).

    Each row carries id= (for other tools) and ref= (evidence for memory_assess), how it was found (`sem#2 + lex#1`;
    `+ ent`: linked to an entity your query names), its room#slot and the entities it is linked to; the header says
    what ran ("hybrid" only when both arms did; a degraded marker otherwise), the How: line the arms, the
    similarity floor, query rewriting and the fallback, and the tail gives the evidence batch id. A hit means
    relevant, not sufficient. With `as_of` / `known_at` the header says it is an as-of view. When nothing matches,
    `fallback="overview"` lists what the palaces hold, labelled overview: it is not an answer and has no refs.
    Next: memory_assess with the batch id and the refs that answer the question; memory_examine for full text.
    """
    return await run(
        lambda call: _search(
            call,
            query=query,
            room=room,
            kind=kind,
            as_of=as_of,
            known_at=known_at,
            project=project,
            limit=limit,
            fallback=fallback,
        )
    )


def _search(
    call: ToolCall,
    *,
    query: str,
    room: str | None,
    kind: schemas.Kind | None,
    as_of: datetime | None,
    project: str | None,
    limit: int,
    known_at: datetime | None = None,
    fallback: str | None = None,
) -> tuple[schemas.SearchOut, str]:
    palace_ids = [call.palace(project).pk] if project else None
    chosen = search_fallback_choose(user=call.user, asked=fallback)
    result = memory_search(
        user=call.user,
        request=SearchRequest(
            query=query,
            palace_ids=palace_ids,
            kind=kind,
            room=room or None,
            as_of=as_of,
            known_at=known_at,
            limit=limit,
            fallback=chosen.for_search,
        ),
        token_id=call.token_id,
        reinforce=call.caller.can_write,
    )
    shown = {h.memory.palace_id for h in result.hits}
    if result.overview is not None:
        shown |= set(result.overview.rooms) | {e.memory.palace_id for e in result.overview.entries}
    labels = palace_labels(user=call.user, palace_ids=shown)
    edges = open_contradictions(memory_ids=[h.memory.pk for h in result.hits])
    out = mapping.search_out(query=query, result=result, labels=labels, open_edges=edges, fallback_from=chosen.source)
    out.time_zone_note = zone_note(as_of=as_of, known_at=known_at)
    return out, text.with_zone_note(text.searched(out), out.time_zone_note)


# --- memory_assess -------------------------------------------------------------------------------------------------


@tool("memory_assess", title="Assess evidence")
async def memory_assess(
    batch_id: Annotated[str, Field(min_length=1, max_length=64, description="batch= from a search.")],
    evidence_refs: Annotated[
        list[Annotated[str, Field(max_length=64)]],
        Field(max_length=8, description="Up to 8 ref= values from THAT batch's rows."),
    ],
    adequate: Annotated[bool, Field(description="Your claim: the cited evidence answers the question.")],
    next_strategy: Annotated[
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
    ref belongs to that batch, and next_strategy is `answer`; otherwise `insufficient` with the strategy rewritten to
    `retrieve`. Refs from other batches are rejected and listed. Every verdict is recorded in the audit log. A
    sufficient verdict raises the cited memories' confidence, except with a read token, which changes no memory
    (`reinforcement` says which).
    Next: answer if sufficient; otherwise search again (another query, room or project).
    """
    return await run(
        lambda call: _assess(
            call,
            batch_id=batch_id,
            evidence_refs=list(evidence_refs),
            adequate=adequate,
            next_strategy=next_strategy,
            missing=list(missing),
        )
    )


def _assess(
    call: ToolCall, *, batch_id: str, evidence_refs: list[str], adequate: bool, next_strategy: str, missing: list[str]
) -> tuple[schemas.AssessOut, str]:
    verdict = evidence_assess(
        user=call.user,
        actor=call.actor,
        batch=batch_id,
        evidence_refs=evidence_refs,
        adequate=adequate,
        next_strategy=next_strategy,
        missing=missing,
        may_write=call.caller.can_write,  # a read token never writes, whatever the user's role in the palace
    )
    out = mapping.assess_out(verdict)
    return out, text.assessed(out)


# --- memory_examine ------------------------------------------------------------------------------------------------


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
    return await run(lambda call: _examine(call, ids=list(ids)))


def _examine(call: ToolCall, *, ids: list[int]) -> tuple[schemas.ExamineOut, str]:
    labels = palace_labels(user=call.user)
    found = memories_by_id(palace_ids=list(labels), ids=ids)
    unique = list(dict.fromkeys(ids))
    rows = [mapping.memory_row(found[i], labels, max_chars=None) for i in unique if i in found]
    out = schemas.ExamineOut(memories=rows, not_found=[i for i in unique if i not in found])
    return out, text.examined(out)


# --- memory_profile and atrium://profile ---------------------------------------------------------------------------


@tool("memory_profile", title="Your standing profile")
async def memory_profile(project: schemas.Project = None) -> Annotated[CallToolResult, schemas.ProfileOut]:
    """The grand hall: your standing profile — your curated profile first (if any; edit it with
    memory_profile_edit), then the curated profile of the project (`project`, else this connection's, else your
    token's default project), then the top memories of your
    personal palace, each with its room#slot, all within one fixed token budget; entries that do not fit are
    listed as #id lines and counted as "+N more"; a line says how many reviews are due. The same text is the
    resource atrium://profile and GET /api/v1/profile.txt (for session-start hooks).

    Use it at the start of a session to know who you work for and what they prefer (memory_handoff_load also
    gives your handoff for a project).
    Next: memory_search for anything specific; memory_examine #ids.
    """
    return await run(lambda call: _profile(call, project=project))


def _profile(call: ToolCall, *, project: str | None = None) -> tuple[schemas.ProfileOut, str]:
    palace = call.personal()
    # The project whose curated profile joins the personal one: by the usual precedence; a token default the user
    # left is passed over here (the profile is personal first, and session-start hooks read it), not an error.
    chosen = call.palace(project, write=False, gone_default="personal")
    palaces = [palace] if chosen.pk == palace.pk else [palace, chosen]
    reviews_due = review_due_count(user=call.user)
    built = standing_profile_build(
        user=call.user, palace_id=palace.pk, curated=curated_block(palaces=palaces), reviews_due=reviews_due
    )
    out = mapping.profile_out(built)
    return out, out.text


@resource(
    "atrium://profile",
    name="profile",
    title="Standing profile",
    description="Your standing profile (the grand hall), wrapped in <atrium_memory_context>, within its token budget.",
)
async def profile_resource() -> str:
    try:
        result = await memory_profile()
    except ToolError as exc:
        raise ResourceError(str(exc)) from None
    structured = result.structured_content or {}
    profile = structured.get("text") if isinstance(structured, dict) else None
    if not isinstance(profile, str):  # pragma: no cover - the profile always renders text
        raise NotFound("profile unavailable")
    return profile


__all__ = ["memory_assess", "memory_examine", "memory_profile", "memory_search_tool", "profile_resource"]
