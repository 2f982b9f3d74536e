"""memory_facts: write facts about entities, or ask what was true (as_of) and what Atrium knew (known_at)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from api.mcp import mapping, schemas, text
from api.mcp.registry import tool
from api.mcp.runner import ToolCall, run
from api.schemas import Instant, zone_note
from memory.knowledge import MAX_FACTS, facts_query, facts_write
from palace.errors import InvalidInput
from palace.selectors import palace_labels


@tool("memory_facts", title="Facts about an entity, on two time axes", writes_in_a_mode=True)
async def memory_facts(
    facts: Annotated[
        list[schemas.FactWrite] | None,
        Field(max_length=MAX_FACTS, description="Write mode: up to 50 facts. Omit to query."),
    ] = None,
    entity: Annotated[str | None, Field(max_length=200, description="Query mode: the entity's name or alias.")] = None,
    entity_id: Annotated[int | None, Field(ge=1, description="Query mode: the entity's id (entity_id=).")] = None,
    as_of: Annotated[
        Instant | None, Field(description="Query: facts true at this time in the world (ISO 8601).")
    ] = None,
    known_at: Annotated[
        Instant | None, Field(description="Query: as Atrium knew them at this time (record time, ISO 8601).")
    ] = None,
    include_invalid: Annotated[bool, Field(description="Query: also list ended and replaced facts, marked.")] = False,
    project: schemas.Project = None,
) -> Annotated[CallToolResult, schemas.FactsOut]:
    """Facts are short statements about an entity (a person, project, tool…), each true for a time.

    Write mode (`facts`, needs a write token): each entry names the entity (`entity` name, created when new, or
    `entity_id`) and gives `content`, optional `predicate`, `valid_from` (ISO date) and `replaces` (a fact= id: ends
    only that fact, at the new one's valid_from). Bad entries come back in `failed` with the reason; the rest are
    written. Query mode (`entity` or `entity_id`): the facts true now, or `as_of` a time (world time), as Atrium knew
    them `known_at` a time (record time); `include_invalid` lists ended and replaced ones too. A query creates no
    entity: an unknown name returns suggestions, an ambiguous one its candidates (call again with entity_id).
    Writes go to `project`, else your token's default project, else your personal palace; queries read every palace
    you belong to (or `project`).
    Next: memory_facts with replaces= to correct a fact; memory_search with as_of to see memories at that time.
    """
    return await run(
        lambda call: _facts(
            call,
            facts=facts,
            entity=entity,
            entity_id=entity_id,
            as_of=as_of,
            known_at=known_at,
            include_invalid=include_invalid,
            project=project,
        )
    )


def _facts(
    call: ToolCall,
    *,
    facts: list[schemas.FactWrite] | None,
    entity: str | None,
    entity_id: int | None,
    as_of: datetime | None,
    known_at: datetime | None,
    include_invalid: bool,
    project: str | None,
) -> tuple[schemas.FactsOut, str]:
    if facts is not None:
        if entity is not None or entity_id is not None or as_of or known_at or include_invalid:
            raise InvalidInput("give facts (write) or entity/entity_id with as_of/known_at (query), not both")
        call.caller.require_write()
        palace = call.palace(project, write=True)
        entries = [f.model_dump(by_alias=True, exclude_none=True) for f in facts]
        result = facts_write(palace=palace, actor=call.actor, facts=entries)
        out = mapping.facts_written_out(result, palace_labels(user=call.user, palace_ids={palace.pk}))
        return out, text.facts_written(out)
    labels = palace_labels(user=call.user)
    palace_ids = [call.palace(project).pk] if project else list(labels)
    found = facts_query(
        palace_ids=palace_ids,
        entity=entity,
        entity_id=entity_id,
        as_of=as_of,
        known_at=known_at,
        include_invalid=include_invalid,
    )
    out = mapping.facts_queried_out(found, labels, include_invalid=include_invalid)
    out.time_zone_note = zone_note(as_of=as_of, known_at=known_at)
    return out, text.with_zone_note(text.facts_queried(out), out.time_zone_note)


__all__ = ["memory_facts"]
