"""Tools of the curated profile and the live handoff: memory_profile_edit (view, edit, roll back a palace's curated
profile), memory_handoff_save, memory_handoff_load (the session bootstrap block) and memory_history (versions of a
handoff or a profile, or a memory's supersede chain). memory_checkout (tools/versions.py) brings back a handoff
version too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from mcp_types import CallToolResult
from pydantic import Field

from api.mcp import mapping, schemas, text
from api.mcp.registry import tool
from api.mcp.runner import ToolCall, run
from memory.context import (
    BOOTSTRAP_MIN_TOKEN_BUDGET,
    BOOTSTRAP_TOKEN_BUDGET,
    MAX_DOING_CHARS,
    MAX_ITEM_CHARS,
    MAX_ITEMS,
    MAX_PROFILE_CHARS,
    HandoffInput,
    bootstrap_build,
    curated_checkout,
    curated_edit,
    curated_history,
    handoff_current,
    handoff_history,
    handoff_save,
)
from memory.models import HandoffVersion, ProfileVersion
from memory.selectors import memory_supersede_chain
from palace.errors import InvalidInput
from palace.selectors import palace_labels, role_in

if TYPE_CHECKING:
    from palace.models import Palace

VERSION_LIMIT = 20
ListOfLines = Annotated[list[Annotated[str, Field(max_length=MAX_ITEM_CHARS)]], Field(max_length=MAX_ITEMS)]
ExpectedVersion = Annotated[
    int | None,
    Field(ge=0, le=2**31 - 1, description="The version you read (0 when there is none yet): the optimistic lock."),
]


def version_out(v: ProfileVersion) -> schemas.ProfileVersionOut:
    return schemas.ProfileVersionOut(
        version=v.version,
        content=v.content,
        rolled_back_from=v.rolled_back_from,
        created_by=v.created_by.get_username() if v.created_by is not None else "",
        created_at=v.created_at,
    )


def handoff_out(h: HandoffVersion | None, palace: Palace) -> schemas.HandoffOut:
    if h is None:
        return schemas.HandoffOut(palace=palace.label, version=0, doing="", next_steps=[], open_questions=[], files=[])
    return schemas.HandoffOut(
        palace=palace.label,
        version=h.version,
        doing=h.doing,
        next_steps=list(h.next_steps),
        open_questions=list(h.open_questions),
        files=list(h.files),
        restored_from=h.restored_from,
        created_at=h.created_at,
    )


# --- memory_profile_edit -------------------------------------------------------------------------------------------


@tool("memory_profile_edit", title="View or edit the curated profile", write=True)
async def memory_profile_edit(
    action: Annotated[Literal["view", "edit", "rollback"], Field(description="view | edit | rollback")] = "view",
    content: Annotated[
        str | None, Field(max_length=MAX_PROFILE_CHARS, description="The whole new text (edit).")
    ] = None,
    expected_version: ExpectedVersion = None,
    version: Annotated[int | None, Field(ge=1, le=2**31 - 1, description="The version to restore (rollback).")] = None,
    project: schemas.Project = None,
) -> Annotated[CallToolResult, schemas.ProfileEditOut]:
    """The curated profile: a short text a person writes about themselves (personal palace: `project` "personal",
    or omitted with a token that has no default project) or a project's writers about the project (`project`, or
    the token's default project). It is injected first into memory_profile, atrium://profile and the bootstrap
    block, before the memories Atrium derives.

    - view: the current text, its version and the history (members of a project may view; read tokens use
      memory_history target=profile instead).
    - edit: `content` (the whole new text) and `expected_version` (the version you viewed; 0 for the first). A
      stale version fails with the current one in the message: view again, merge, retry.
    - rollback: `version` to restore; it becomes a new version (history is never rewritten). `expected_version`
      optional.
    Text is cleaned like memory content (secrets redacted). Every change is in the op log.
    Next: memory_profile to see the injected result.
    """
    return await run(
        lambda call: _profile_edit(
            call, action=action, content=content, expected=expected_version, version=version, project=project
        )
    )


def _profile_edit(
    call: ToolCall,
    *,
    action: Literal["view", "edit", "rollback"],
    content: str | None,
    expected: int | None,
    version: int | None,
    project: str | None,
) -> tuple[schemas.ProfileEditOut, str]:
    palace = call.palace(project, write=action != "view")
    if action == "edit":
        if content is None or expected is None:
            raise InvalidInput("edit needs `content` and `expected_version` (0 for the first edit; view shows it)")
        curated_edit(palace=palace, actor=call.actor, content=content, expected_version=expected)
    elif action == "rollback":
        if version is None:
            raise InvalidInput("rollback needs `version` (view lists the versions)")
        curated_checkout(palace=palace, actor=call.actor, version=version, expected_version=expected)
    history = curated_history(palace_id=palace.pk, limit=VERSION_LIMIT)
    role = role_in(user=call.user, palace=palace)
    out = schemas.ProfileEditOut(
        palace=palace.label,
        action=action,
        version=history[0].version if history else 0,
        content=history[0].content if history else "",
        can_edit=role in ("owner", "editor") and call.caller.can_write,
        history=[version_out(v) for v in history],
    )
    return out, text.profile_edit(out)


# --- memory_handoff_save / memory_handoff_load ---------------------------------------------------------------------


@tool("memory_handoff_save", title="Save your handoff", write=True)
async def memory_handoff_save(
    expected_version: Annotated[
        int, Field(ge=0, le=2**31 - 1, description="The version you loaded (0 before the first save).")
    ],
    doing: Annotated[str, Field(max_length=MAX_DOING_CHARS, description="What you were doing.")] = "",
    next_steps: ListOfLines = [],  # noqa: B006 (pydantic copies defaults)
    open_questions: ListOfLines = [],  # noqa: B006
    files: ListOfLines = [],  # noqa: B006
    project: schemas.Project = None,
) -> Annotated[CallToolResult, schemas.HandoffOut]:
    """Save where you stopped, for the next session: what you were doing, next steps, open questions, files touched.
    One handoff per person and palace (`project` you may write to, else your token's default project, else your
    personal palace), private to you even in a shared project. Each save is a new version; the previous snapshot is
    kept (memory_history lists them).

    `expected_version` is the version memory_handoff_load gave you (0 before the first save); a save against a
    stale version is refused with the current one in the message — load, merge, save again.
    Next: at the next session start, memory_handoff_load.
    """
    return await run(
        lambda call: _handoff_save(
            call,
            expected=expected_version,
            data=HandoffInput(
                doing=doing, next_steps=list(next_steps), open_questions=list(open_questions), files=list(files)
            ),
            project=project,
        )
    )


def _handoff_save(
    call: ToolCall, *, expected: int, data: HandoffInput, project: str | None
) -> tuple[schemas.HandoffOut, str]:
    palace = call.palace(project, write=True)
    row = handoff_save(palace=palace, actor=call.actor, data=data, expected_version=expected)
    out = handoff_out(row, palace)
    return out, text.handoff_saved(out)


@tool("memory_handoff_load", title="Load your handoff (session bootstrap)")
async def memory_handoff_load(
    project: schemas.Project = None,
    budget: Annotated[
        int, Field(ge=BOOTSTRAP_MIN_TOKEN_BUDGET, le=8192, description="Token budget of the block (128–8192).")
    ] = BOOTSTRAP_TOKEN_BUDGET,
) -> Annotated[CallToolResult, schemas.BootstrapOut]:
    """Start a session where the last one stopped: your handoff in this palace (`project`, else your token's default
    project, else personal), then the curated profiles (yours, then the project's), then the most relevant recent
    memories of that palace (by rule: importance, then recency, last 30 days) — one block within the token budget,
    wrapped as recalled memory.

    The handoff's `version` is what memory_handoff_save expects next.
    Next: memory_search for anything specific; memory_handoff_save when you stop.
    """
    return await run(lambda call: _handoff_load(call, project=project, budget=budget))


def _handoff_load(call: ToolCall, *, project: str | None, budget: int) -> tuple[schemas.BootstrapOut, str]:
    personal = call.personal()
    palace = call.palace(project, write=False)
    block = bootstrap_build(actor=call.actor, palace=palace, personal=personal, budget=budget)
    current = handoff_current(palace_id=palace.pk, actor=call.actor)
    out = schemas.BootstrapOut(
        text=block.text,
        tokens=block.tokens,
        budget=block.budget,
        handoff=handoff_out(current, palace),
        handoff_truncated=block.handoff_truncated,
        curated_truncated=block.curated_truncated,
        memories=block.memories,
        more=block.more,
    )
    return out, out.text


# --- memory_history ------------------------------------------------------------------------------------------------


@tool("memory_history", title="Versions of a handoff, a profile or a memory")
async def memory_history(
    target: Annotated[
        Literal["handoff", "profile", "memory"],
        Field(description="handoff: your handoff's versions; profile: the curated profile's; memory: a chain."),
    ] = "handoff",
    id: Annotated[int | None, Field(ge=1, le=2**63 - 1, description="The memory id (target=memory).")] = None,
    project: schemas.Project = None,
    limit: Annotated[int, Field(ge=1, le=50, description="Versions to list (1–50).")] = VERSION_LIMIT,
) -> Annotated[CallToolResult, schemas.HistoryOut]:
    """List versions, newest first: your handoff's snapshots in a palace (`project`, else your token's default
    project, else personal), the curated profile's versions, or a memory's supersede chain (target=memory with `id`:
    every correction of it).

    Nothing is ever deleted by a new version. Next: memory_checkout to bring one back (target=handoff with the
    version number, or a memory id); memory_profile_edit action=rollback for the profile.
    """
    return await run(lambda call: _history(call, target=target, id=id, project=project, limit=limit))


def _history(
    call: ToolCall, *, target: Literal["handoff", "profile", "memory"], id: int | None, project: str | None, limit: int
) -> tuple[schemas.HistoryOut, str]:
    if target == "memory":
        if id is None:
            raise InvalidInput("target=memory needs `id` (a memory id, as printed id=…)")
        chain = memory_supersede_chain(user=call.user, memory_id=id)
        labels = palace_labels(user=call.user, palace_ids={m.palace_id for m in chain})
        rows = [mapping.memory_row(m, labels) for m in chain[:limit]]
        out = schemas.HistoryOut(target=target, palace=rows[0].palace if rows else "", memories=rows)
        return out, text.history(out)
    palace = call.palace(project, write=False)
    if target == "profile":
        versions = curated_history(palace_id=palace.pk, limit=limit)
        out = schemas.HistoryOut(target=target, palace=palace.label, profile=[version_out(v) for v in versions])
    else:
        snapshots = handoff_history(palace_id=palace.pk, actor=call.actor, limit=limit)
        out = schemas.HistoryOut(
            target=target, palace=palace.label, handoffs=[handoff_out(h, palace) for h in snapshots]
        )
    return out, text.history(out)
