"""The facts family's input and outputs (memory_facts). Output wire names are camelCase and input names snake_case
(camelCase accepted), as in api/mcp/schemas/common.py."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from api.mcp.schemas.common import FactOut, Out, PalaceScoped


class EntityRef(Out):
    id: int
    name: str
    kind: str
    palace: str
    aliases: list[str] = Field(default_factory=list)


class FactWrite(BaseModel):
    """One fact to write. Limits are checked per entry by the server, so one bad entry fails alone (in `failed`);
    unknown fields are reported there too."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")

    entity: str | None = Field(default=None, description="Entity name (created when new; at most 200 characters).")
    # Dumped as entityId, the key memory.knowledge.facts_write reads.
    entity_id: int | None = Field(
        default=None,
        validation_alias=AliasChoices("entity_id", "entityId"),
        serialization_alias="entityId",
        description="Or the entity's id (entity_id=).",
    )
    content: str = Field(description="The fact: one short statement (at most 2000 characters).")
    predicate: str | None = Field(default=None, description="Optional relation, e.g. lives_in, uses, owns.")
    kind: str | None = Field(default=None, description="Kind of a new entity: person, project, tool, concept, place.")
    replaces: int | None = Field(default=None, description="fact= id this one replaces: ends only that fact.")
    valid_from: str | None = Field(
        default=None,
        validation_alias=AliasChoices("valid_from", "validFrom"),
        serialization_alias="valid_from",
        description="ISO date it became true (default: unknown; when replacing, now).",
    )


class FactWrittenOut(Out):
    index: int
    id: int
    entity_id: int
    entity: str
    entity_created: bool
    replaces: int | None = None
    alongside: list[int] = Field(
        default_factory=list,
        description="current facts of the entity with the same predicate, now true beside this one; if this one "
        "replaces one of them, send it again with replaces=<that id> (no copy is made)",
    )
    adopted: bool = Field(
        default=False, description="replaces named a fact and this identical current fact became its successor"
    )


class FactFailedOut(Out):
    index: int
    reason: str
    candidates: list[EntityRef] = Field(default_factory=list)


class FactsOut(PalaceScoped):
    mode: Literal["write", "query"]
    palace: str | None = None
    written: list[FactWrittenOut] = Field(default_factory=list)
    failed: list[FactFailedOut] = Field(default_factory=list)
    entity: EntityRef | None = None
    facts: list[FactOut] = Field(default_factory=list)
    candidates: list[EntityRef] = Field(default_factory=list, description="the name is ambiguous: pass entity_id")
    suggestions: list[EntityRef] = Field(default_factory=list, description="no such entity; did you mean")
    as_of: datetime | None = None
    known_at: datetime | None = None
    time_zone_note: str | None = Field(
        default=None, description="which date arguments had no time zone, and the zone they were read in"
    )
    include_invalid: bool = False
    hidden: int = Field(default=0, description="facts not shown (ended or replaced; include_invalid shows them)")
