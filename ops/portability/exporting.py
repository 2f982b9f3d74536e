"""Exporting what a person may read as one JSON document, and the redacted view of it (issue 16, "Portability").

The document (`FORMAT`, version `VERSION`) holds, per palace: its members, rooms, slots and tour route, memories
with every field (superseded versions included: they are rows of their own, linked by `supersedes`), edges, review
cards, entities and their links to memories, facts, profile versions, handoffs, and the palace's op-log rows.
Every row keeps its id on this server; references between rows use those ids, and people are named by username (ids
of users differ between servers). Derived data is left out: `search_vector` (a database trigger rebuilds it from
`search_text`). Embedding vectors are included (the JSON is lossless and an import needs no embedder), with the model
that made them in `embedding.model`; about 4 kB per memory. The redacted view leaves them out.

The export runs with row-level security acting as the person (palace/rls.py), whatever context its caller had: the
command line's system context cannot widen it. A person who may not read a palace gets "not found", as elsewhere.

Redacted view: every string in the document goes through a second redaction pass (memory.text.redaction.redact, the
same rules the write pipeline ran when the text came in, so rules added since then apply too) and is then cut to a
40-character preview; op rows lose their `detail` (it may quote bodies) and vectors and search texts are dropped.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import models
from django.utils import timezone

from memory.models import EMBEDDING_DIM, Edge, Entity, Fact, HandoffVersion, Memory, MemoryEntity, ProfileVersion
from memory.providers import embedder_model_name
from memory.text import redact
from palace import rls
from palace.errors import NotFound
from palace.models import Membership, OpLog, Palace, Room, Slot, TourStop
from palace.selectors import palace_get, palaces_readable
from review.models import ReviewCard

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

FORMAT = "atrium-export"
VERSION = 1
PREVIEW_CHARS = 40


@dataclass(frozen=True)
class Table:
    """One kind of row in a palace's section: its model, the fields that point at rows of other sections (by
    section name), and the fields that name people."""

    section: str
    model: type[models.Model]
    refs: dict[str, str]
    people: tuple[str, ...] = ()
    omit: tuple[str, ...] = ()
    # The person field of a row private to that person (a handoff): an export carries only the exporter's own.
    private_to: str | None = None


# In the order an import creates them: a row's references point at sections above it or at its own section.
TABLES: tuple[Table, ...] = (
    Table("rooms", Room, {}),
    Table("slots", Slot, {"room": "rooms"}),
    Table("tour", TourStop, {"slot": "slots"}),
    Table(
        "memories",
        Memory,
        {"slot": "slots", "supersedes": "memories"},
        people=("created_by",),
        omit=("search_vector",),
    ),
    Table("edges", Edge, {"from_memory": "memories", "to_memory": "memories"}, people=("decided_by",)),
    Table("review_cards", ReviewCard, {"memory": "memories"}),
    Table("entities", Entity, {"merged_into": "entities"}),
    Table("memory_entities", MemoryEntity, {"memory": "memories", "entity": "entities"}),
    Table(
        "facts",
        Fact,
        {"entity": "entities", "replaces": "facts", "source_memory": "memories"},
        people=("created_by",),
    ),
    Table("profile_versions", ProfileVersion, {}, people=("created_by",)),
    Table("handoffs", HandoffVersion, {}, people=("user",), private_to="user"),
    Table("oplog", OpLog, {}, people=("actor_user",)),
)
SECTIONS = tuple(t.section for t in TABLES)


def exportable_fields(table: Table) -> list[models.Field[Any, Any]]:
    """The stored fields a section carries: every concrete field but the palace (implied) and derived ones."""
    return [f for f in table.model._meta.concrete_fields if f.name not in {"palace", *table.omit}]


def _value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "tolist"):  # a pgvector vector (numpy array)
        return [float(x) for x in value.tolist()]
    return value


PAGE_ROWS = 500  # rows read per round trip from a server-side cursor: an export's memory does not grow with a palace


def _usernames(ids: set[int]) -> dict[int, str]:
    from django.contrib.auth import get_user_model

    return dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username")) if ids else {}


def table_rows(table: Table, palace: Palace, exporter: AbstractBaseUser) -> Iterator[dict[str, Any]]:
    """A section's rows in id order, read PAGE_ROWS at a time through a server-side cursor (`.iterator`), with
    people named by username (looked up once a page, remembered for the rest)."""
    fields = exportable_fields(table)
    rows = table.model._default_manager.filter(palace=palace)
    if table.private_to is not None:
        # Another member's handoff is theirs alone: filtered here, and by the table's policy underneath.
        rows = rows.filter(**{table.private_to: exporter})
    values = rows.order_by("pk").values(*[f.attname for f in fields]).iterator(chunk_size=PAGE_ROWS)
    people = [f.attname for f in fields if f.name in table.people]
    names: dict[int, str] = {}
    for page in itertools.batched(values, PAGE_ROWS):
        names.update(_usernames({row[p] for row in page for p in people if row[p] is not None} - names.keys()))
        for row in page:
            item: dict[str, Any] = {}
            for f in fields:
                raw = row[f.attname]
                if f.name in table.people:
                    item[f.name] = names.get(raw) if raw is not None else None
                elif f.is_relation:
                    item[f.name] = raw
                else:
                    item[f.name] = _value(raw)
            yield item


def palace_header(palace: Palace) -> dict[str, Any]:
    """A palace section's own fields, before its tables."""
    # Accepted members only: a pending invitation grants nothing, and listing it would tell an exporter who was
    # invited (and so who exists on this server).
    members = (
        Membership.objects.filter(palace=palace, state=Membership.State.ACCEPTED)
        .select_related("user")
        .order_by("user__username")
    )
    return {
        "id": palace.pk,
        "kind": palace.kind,
        "name": palace.name,
        "origin": palace.origin_key,
        "owner": palace.personal_owner.get_username() if palace.personal_owner is not None else None,
        "created_at": palace.created_at.isoformat(),
        "members": [{"username": m.user.get_username(), "role": m.role} for m in members],
    }


def palace_section(palace: Palace, *, exporter: AbstractBaseUser) -> dict[str, Any]:
    section = palace_header(palace)
    for table in TABLES:
        section[table.section] = list(table_rows(table, palace, exporter))
    return section


def project_palace(*, user: AbstractBaseUser, project: str, write: bool = False) -> Palace:
    """The project palace for a git origin in any spelling, or for its stored key (`github.com/org/repo`, as exports,
    links and the panel write it); NotFound when the person may not read it, exactly as when it does not exist."""
    try:
        return palace_get(user=user, origin=project, write=write)
    except NotFound:
        pk = Palace.objects.filter(origin_key=project.strip()).values_list("pk", flat=True).first()
        if pk is None:
            raise
        return palace_get(user=user, palace_id=pk, write=write)


def palaces_for_export(*, user: AbstractBaseUser, project: str | None) -> list[Palace]:
    """The palaces an export covers: the project's (NotFound when the person may not read it), or all they may read
    (their personal palace first)."""
    if project:
        return [project_palace(user=user, project=project)]
    palaces = list(palaces_readable(user=user).select_related("personal_owner").order_by("kind", "pk"))
    if not palaces:
        raise NotFound("palace not found")
    return palaces


def document_envelope(*, user: AbstractBaseUser, project: str | None, redacted: bool, now: datetime) -> dict[str, Any]:
    """The document's fields before `palaces`, in their order (the streamed export writes the same ones)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": now.isoformat(),
        "exported_by": user.get_username(),
        "scope": "project" if project else "everything readable",
        "redacted": redacted,
        "embedding": {"model": embedder_model_name(), "dimensions": EMBEDDING_DIM, "vectors_included": not redacted},
    }


def export_document(
    *, user: AbstractBaseUser, project: str | None = None, redacted: bool = False, now: datetime | None = None
) -> dict[str, Any]:
    """Everything `user` may read (or one project of it) as the export document; the redacted view when asked.
    Held whole in memory: for the command and MCP's inline answer; REST downloads stream it (streaming.py)."""
    now = now or timezone.now()
    with rls.acting_as(user):
        palaces = palaces_for_export(user=user, project=project)
        sections = [palace_section(p, exporter=user) for p in palaces]
    document = document_envelope(user=user, project=project, redacted=redacted, now=now)
    document["palaces"] = sections
    return redacted_view(document) if redacted else document


# --- the redacted view ------------------------------------------------------------------------------------------

# Dropped from the redacted view: vectors and search texts (they restate bodies), op details (they may quote them).
REDACTED_DROP = frozenset({"embedding", "search_text", "detail"})


def preview(text: str) -> str:
    """`text` after a second redaction pass, cut to PREVIEW_CHARS characters (an ellipsis marks a cut)."""
    clean = redact(text).text
    return clean if len(clean) <= PREVIEW_CHARS else clean[: PREVIEW_CHARS - 1] + "…"


def redact_tree(value: Any) -> Any:
    if isinstance(value, str):
        return preview(value)
    if isinstance(value, list):
        return [redact_tree(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_tree(v) for k, v in value.items() if k not in REDACTED_DROP}
    return value


def redacted_view(document: dict[str, Any]) -> dict[str, Any]:
    """The shareable view: no vectors, search texts or op details; every string redacted again and at most
    PREVIEW_CHARS long. Not importable (the bodies are cut)."""
    view = {k: v for k, v in document.items() if k != "palaces"}
    view["embedding"] = dict(document["embedding"], vectors_included=False)
    view["redacted"] = True
    view["palaces"] = redact_tree(document["palaces"])
    return view
