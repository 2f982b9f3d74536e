"""What every family of MCP tools shares: the argument types with their limits (ids, projects, content, placards,
importance, entities) and the base models, under which outputs become `outputSchema` + `structuredContent`. Output
wire names are camelCase; argument names are snake_case, like the REST API's, and their camelCase spelling is accepted
too (api/mcp/arguments.py does it for the tools' own arguments, `In` for the objects inside them)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from django.conf import settings
from pydantic import AliasChoices, AliasGenerator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from palace.kinds import KindName

Kind = KindName  # the one definition of the kinds (palace.kinds), under the name the tools use
MemoryId = Annotated[int, Field(ge=1, le=2**63 - 1, description="A memory id, as printed `id=` / `#id`.")]
Project = Annotated[
    str | None,
    Field(
        default=None,
        max_length=400,
        description=(
            "Git origin of a project palace you are a member of (e.g. github.com/org/repo or "
            'git@github.com:org/repo.git), or "personal" for your personal palace. Omitted: the project this '
            "connection names (X-Atrium-Project header or ?project= on the MCP URL), else your token's default "
            "project, else your personal palace (a tool that reads every palace you belong to when none is named "
            "says so). The result's palaceUsed says which palace was used and why."
        ),
    ),
]
# Every tool argument that carries memory content has this type, so content over the limit is refused by the
# schema (a tool error naming the limit) before any processing.
CONTENT_LIMIT = settings.ATRIUM_MAX_CONTENT_CHARS
Content = Annotated[
    str,
    Field(
        min_length=1,
        max_length=CONTENT_LIMIT,
        description=f"One idea, at most {CONTENT_LIMIT} characters (split longer text into several memories).",
    ),
]
MergedContent = Annotated[
    str,
    Field(
        max_length=CONTENT_LIMIT,
        description=f"For merge only: the corrected text that replaces both, at most {CONTENT_LIMIT} characters.",
    ),
]
Placard = Annotated[str, Field(max_length=200)]
Importance = Annotated[
    float | None,
    Field(
        default=None,
        ge=0,
        le=1,
        description=(
            "0–1: how much it matters later. Omit to let the server decide (decisions and preferences start higher, "
            "episodes lower, 'always/never/must' raises, 'maybe/for now' lowers); low-importance memories fade when "
            "unused."
        ),
    ),
]
Restore = Annotated[
    bool,
    Field(
        description=(
            "If the content restates a forgotten memory, restore that memory instead of deferring (default: the save "
            "is deferred with the forgotten memory's id and epitaph)."
        )
    ),
]
Reason = Annotated[str, Field(max_length=500)]


class Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


def snake_or_camel(name: str) -> AliasChoices:
    """A snake_case argument (what the schema shows) that also accepts its camelCase spelling (what some clients
    were written against: expectedVersion, entityId)."""
    return AliasChoices(name, to_camel(name))


class In(BaseModel):
    model_config = ConfigDict(alias_generator=AliasGenerator(validation_alias=snake_or_camel), extra="forbid")


class PalaceUsed(Out):
    id: int
    name: str = Field(description='"my palace" or the project origin')
    kind: Literal["personal", "project"]
    chosen_by: Literal["argument", "connection", "token", "personal"] = Field(
        description=(
            "argument: the tool's `project`; connection: the X-Atrium-Project header or ?project= on the MCP URL; "
            "token: the token's default project; personal: none of those named one"
        )
    )


class PalaceScoped(Out):
    """An output of a tool that addresses one palace: it says which, and why (filled by the runner)."""

    palace_used: PalaceUsed | None = Field(
        default=None,
        description="the palace this call used and which level chose it; null when it read every palace you belong to",
    )


class EntityIn(In):
    name: Annotated[str, Field(min_length=1, max_length=200, description="The name as you would write it.")]
    kind: Annotated[
        str | None, Field(default=None, max_length=32, description="person | project | tool | concept | place | other")
    ] = None
    aliases: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=200)]],
        Field(default_factory=list, max_length=20, description="Other names for the same entity."),
    ]


Entities = Annotated[
    list[EntityIn] | None,
    Field(
        default=None,
        max_length=20,
        description=(
            "Optional: the entities this memory is about, stated by you (linked as source=agent), e.g. "
            '[{"name": "Redis", "kind": "tool"}, {"name": "Bob Lee", "kind": "person", "aliases": ["Bob"]}]. '
            "The server also finds mentions itself."
        ),
    ),
]


class EntityTagOut(Out):
    id: int
    name: str
    kind: str
    source: str = Field(default="", description="who found the mention: rules | model | agent | merge")


class MemoryRow(Out):
    id: int
    kind: str
    status: str
    coordinate: str | None = Field(description="room#slot in its palace; null when not slotted yet")
    palace: str = Field(description='"my palace" or the project origin')
    placard: str
    content: str
    content_truncated: bool = False
    confidence: float
    version: int
    occurred_at: datetime
    created_at: datetime


class FactOut(Out):
    """A fact as it stood at the asked point: valid_to / supersededAt as known then (null: still true / not
    replaced yet)."""

    id: int
    entity_id: int
    entity: str
    predicate: str
    content: str
    valid_from: datetime | None = Field(description="when it became true in the world (null: unknown)")
    valid_to: datetime | None = Field(description="when it stopped being true (null: still true, as known then)")
    recorded_at: datetime = Field(description="when Atrium learned it")
    superseded_at: datetime | None = Field(description="when a later fact replaced this record (as known then)")
    replaces: int | None
    replaced_by: int | None
    state: Literal["current", "ended", "replaced", "not_yet_valid"]
    also_current: list[int] = Field(
        default_factory=list,
        description="other current facts of the entity with the same predicate: both true now; if one replaces the "
        "other, write it again with replaces",
    )
