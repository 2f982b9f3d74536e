"""Importing an export document (ops/portability/exporting.py) into palaces of this server.

Each palace section of the document goes to a target: with `project`, the one section goes to that project's palace;
otherwise a personal section goes to the importing person's personal palace and a project section to the palace of
its origin. A missing project palace is created with the person as owner. The person must be able to write the
target (row-level security acts as them throughout, as on export).

Two modes, chosen per target:

1. **lossless**, into a palace that holds nothing yet (no memories, rooms, entities, profile or handoff versions):
   every row is copied as it was (times, statuses, versions, vectors, review state), with new ids; references
   between rows follow the new ids. A document is a file anyone can edit, so it names nobody of this server: every
   person field that says who wrote a row (`created_by`) is the importing person, one about someone else's decision
   (an edge's `decided_by`) is left empty, and every handoff but the importer's own is skipped (a handoff is private
   to its person). Op rows become a read-only record of the other server's history: actor kind `import` (the
   importer as its user), written now, with the row's original actor, time, target and detail kept under
   `detail["imported"]`; the revert console refuses them. A target id is remapped to the new row's id, or dropped
   when the document does not hold that row (it could name a row of another palace of this server).
2. **merge**, into a palace that already holds memories: the active memories of the section go through the write
   pipeline as one bulk save (memory.save.memory_save_bulk, source "import"), which redacts, deduplicates and
   disposes each like any save, by the rules (a contradiction it opens keeps the rules' ruling, labelled `bulk`);
   the report counts the dispositions. Other rows (versions, edges, review state, op rows) are not merged.

The whole import is one transaction with one `palace.import` op row per target, so it lands entirely or not at all.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import DatabaseError, transaction
from django.utils import timezone

from memory.models import Entity, HandoffVersion, Memory, ProfileVersion
from memory.save import ItemError, SaveItem, SaveResult, memory_save_bulk
from memory.text import scrub_inbound_text
from ops.portability.exporting import FORMAT, TABLES, VERSION, Table, exportable_fields
from palace import rls
from palace.actors import Actor
from palace.approval import project_claim
from palace.errors import Conflict, InvalidInput
from palace.models import OpLog, Palace, Room
from palace.oplog import oplog_write
from palace.origins import InvalidOrigin, normalize_origin
from palace.selectors import palace_get

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

# Op-row targets whose ids are remapped, by target_kind: the section their ids live in.
OP_TARGETS = {"memory": "memories", "edge": "edges", "room": "rooms"}
BATCH = 500


@dataclass
class PalaceImport:
    palace_id: int
    label: str
    mode: str  # lossless | merge
    counts: dict[str, int] = field(default_factory=dict)  # rows created per section (lossless)
    dispositions: dict[str, int] = field(default_factory=dict)  # write-pipeline outcomes (merge)
    skipped: dict[str, int] = field(default_factory=dict)  # rows not imported, by reason
    missing_people: list[str] = field(default_factory=list)
    oplog_id: int = 0


@dataclass
class ImportReport:
    palaces: list[PalaceImport]

    def as_dict(self) -> dict[str, Any]:
        return {"palaces": [vars(p) for p in self.palaces]}


def check_document(document: Any) -> list[dict[str, Any]]:
    """The document's palace sections, after checking it is an importable export; InvalidInput says what is not."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InvalidInput(f'not an Atrium export (expected "format": "{FORMAT}")')
    if document.get("version") != VERSION:
        raise InvalidInput(f"export version {document.get('version')!r} is not supported (this server reads {VERSION})")
    if document.get("redacted"):
        raise InvalidInput("a redacted export holds 40-character previews, not memories: import a full export")
    sections = document.get("palaces")
    if not isinstance(sections, list) or not all(isinstance(s, dict) for s in sections):
        raise InvalidInput("the export has no list of palaces")
    return sections


def _target_key(*, section: dict[str, Any], project: str | None) -> str | None:
    """The origin key of the project palace a section goes to (None: the person's own palace), checked before
    anything is created: a bad origin in `project` or in the document is refused whole (InvalidInput), never half
    created."""
    if project:
        if Palace.objects.filter(origin_key=project.strip()).exists():
            return project.strip()  # the stored key, as an export names it
        raw, where = project, "project origin"
    elif section.get("kind") == Palace.Kind.PROJECT:
        origin: Any = section.get("origin")
        if not isinstance(origin, str):
            raise InvalidInput(f"a project section of the export has no origin (got {origin!r})")
        raw, where = origin, "project origin in the export"
        if Palace.objects.filter(origin_key=raw).exists():
            return raw
        raw = f"https://{raw}"  # a key as an export names it: host/owner/repo
    else:
        return None
    try:
        return normalize_origin(raw)
    except InvalidOrigin as exc:
        raise InvalidInput(f"bad {where} {raw!r}: {exc}", field="project") from exc


def _target(*, key: str | None, user: AbstractBaseUser) -> Palace:
    if key is None:
        return palace_get(user=user, write=True)
    if not Palace.objects.filter(origin_key=key).exists():
        # The importer's own new project (palace/approval.py): when the operator approves new projects, a recorded
        # request and AwaitingApproval, nothing imported. Outside a transaction, so the request outlives the error.
        with rls.acting_as_system("command:import"), contextlib.suppress(Conflict):  # created meanwhile
            project_claim(origin=f"https://{key}", user=user, actor=Actor.for_system("command:import"))
    return palace_get(user=user, palace_id=Palace.objects.get(origin_key=key).pk, write=True)


def palace_is_empty(palace: Palace) -> bool:
    models = (Memory, Room, Entity, ProfileVersion, HandoffVersion)
    return not any(m._default_manager.filter(palace=palace).exists() for m in models)


def import_document(
    *,
    document: Any,
    user: AbstractBaseUser,
    project: str | None = None,
    source: str = "",
    actor: Actor | None = None,
    now: datetime | None = None,
) -> ImportReport:
    """Import `document` as `user` (see the module docstring); one transaction for all of it. `actor` (default: the
    user) is who the op rows name, e.g. the user's token."""
    now = now or timezone.now()
    sections = check_document(document)
    if project and len(sections) != 1:
        raise InvalidInput(f"project takes an export of one palace; this one has {len(sections)}")
    actor = actor or Actor.for_user(user)
    reports = []
    with rls.acting_as(user):
        keys = [_target_key(section=s, project=project) for s in sections]  # every origin checked first
        targets = [_target(key=key, user=user) for key in keys]
        if len({t.pk for t in targets}) != len(targets):
            raise InvalidInput("two palaces of the export would land in the same palace; import them one by one")
        with transaction.atomic():
            for section, palace in zip(sections, targets, strict=True):
                # Serialise with other writers of the palace (the pipeline takes the same lock): two imports into
                # one empty palace cannot both copy into it.
                Palace.objects.select_for_update(no_key=True).filter(pk=palace.pk).values_list("pk").first()
                try:
                    if palace_is_empty(palace):
                        report = _lossless(section=section, palace=palace, importer=user, now=now)
                    else:
                        report = _merge(section=section, palace=palace, actor=actor, now=now)
                except (KeyError, TypeError, ValueError, DatabaseError) as exc:
                    # The whole import rolls back with it: nothing of a damaged file lands.
                    first_line = str(exc).splitlines()[0] if str(exc) else ""
                    raise InvalidInput(f"the export is damaged: {type(exc).__name__}: {first_line}") from exc
                row = oplog_write(
                    op="palace.import",
                    actor=actor,
                    palace=palace,
                    target_kind="palace",
                    target_id=palace.pk,
                    reason=f"import {source}".strip()[:500],
                    detail={
                        "mode": report.mode,
                        "counts": report.counts,
                        "dispositions": report.dispositions,
                        "skipped": report.skipped,
                        "from_palace": section.get("id"),
                    },
                )
                report.oplog_id = row.pk
                reports.append(report)
    return ImportReport(palaces=reports)


# --- lossless ---------------------------------------------------------------------------------------------------


def _lossless(*, section: dict[str, Any], palace: Palace, importer: AbstractBaseUser, now: datetime) -> PalaceImport:
    report = PalaceImport(palace_id=palace.pk, label=palace.label, mode="lossless")
    names = {n for t in TABLES for row in section.get(t.section, []) for n in _people(t, row)}
    # Reported for the importer's information only: no row is attributed to any of them (see the module docstring).
    report.missing_people = sorted(
        names - set(get_user_model().objects.filter(username__in=names).values_list("username", flat=True))
    )
    ids: dict[str, dict[int, int]] = {}
    for table in TABLES:
        rows = section.get(table.section, [])
        if table.model is OpLog:
            rows = [_op_record(row, palace=palace, ids=ids, now=now) for row in rows]
        ids[table.section] = _copy(table=table, rows=rows, palace=palace, ids=ids, importer=importer, report=report)
        report.counts[table.section] = len(ids[table.section])
    return report


# The text a lossless import stores that a model later reads (recall, structured results, the profile): it takes the
# entrance every written text takes (forged protocol tags and control characters removed, secrets redacted), as a
# merge import does through the write pipeline. A document is a file anyone can edit, not a trusted copy of a palace.
STORED_TEXT: dict[str, tuple[str, ...]] = {
    "rooms": ("name",),
    "memories": ("content", "placard", "epitaph", "search_text"),
    "edges": ("resolution_reason",),
    "entities": ("name", "aliases"),
    "facts": ("content",),
    "profile_versions": ("content",),
    "handoffs": ("doing", "next_steps", "open_questions", "files"),
    "oplog": ("reason",),
}
ONE_LINE = frozenset({"name", "placard", "aliases"})


def _scrub(value: Any, *, one_line: bool, found: set[str]) -> Any:
    """A stored text (or a list of them) cleaned and redacted, what was redacted added to `found`; other values as
    they are."""
    if isinstance(value, str):
        result = scrub_inbound_text(value, one_line=one_line)
        found.update(result.types)
        return result.text
    if isinstance(value, list):
        return [_scrub(item, one_line=one_line, found=found) for item in value]
    return value


def _people(table: Table, row: dict[str, Any]) -> list[str]:
    return [row[p] for p in table.people if row.get(p)]


def _copy(
    *,
    table: Table,
    rows: list[dict[str, Any]],
    palace: Palace,
    ids: dict[str, dict[int, int]],
    importer: AbstractBaseUser,
    report: PalaceImport,
) -> dict[int, int]:
    """Insert `rows` as new rows of `table` in `palace`; the map from their exported ids to the new ones."""
    fields = [f for f in exportable_fields(table) if not f.primary_key]
    own = [name for name, section in table.refs.items() if section == table.section]
    new_ids: dict[int, int] = {}
    objs, old_ids = [], []
    for row in rows:
        if table.private_to is not None and row.get(table.private_to) != importer.get_username():
            # Another person's handoff is theirs alone: an import never plants one "for bob".
            reason = f"{table.section}: another person's, private to them"
            report.skipped[reason] = report.skipped.get(reason, 0) + 1
            continue
        values: dict[str, Any] = {"palace_id": palace.pk}
        found: set[str] = set()  # what the entrance redacted from this row's texts
        for f in fields:
            value = row.get(f.name)
            if f.name in table.people:
                value = _person(f.name, value, importer=importer)
            elif f.name in own:
                value = None  # set once every row of the section exists
            elif f.name in table.refs and value is not None:
                value = ids[table.refs[f.name]].get(value)
            elif table.model is Memory and f.name == "sources":
                value = _sources(value, importer=importer)
            elif f.name in STORED_TEXT.get(table.section, ()):
                value = _scrub(value, one_line=f.name in ONE_LINE, found=found)
            values[f.attname] = value
        if found and "redactions" in values:  # a memory says what was redacted from it, as a save does
            values["redactions"] = sorted({*(values["redactions"] or []), *found})
        objs.append(table.model(**values))
        old_ids.append(row["id"])
    model_fields = [table.model._meta.get_field("palace"), *fields]
    for start in range(0, len(objs), BATCH):
        # raw=True: the stored times are kept (auto_now fields would stamp now), as a fixture load does.
        returned = table.model._default_manager._insert(  # type: ignore[attr-defined]
            objs[start : start + BATCH], model_fields, returning_fields=[table.model._meta.pk], raw=True
        )
        for old, (new,) in zip(old_ids[start : start + BATCH], returned, strict=True):
            new_ids[old] = new
    for name in own:
        for row in rows:
            if row.get(name) is not None and row["id"] in new_ids:
                table.model._default_manager.filter(pk=new_ids[row["id"]]).update(
                    **{f"{name}_id": new_ids.get(row[name])}
                )
    return new_ids


# Person fields about someone else's act, not the row's author: left empty (nobody of this server decided it).
SOMEONE_ELSE = frozenset({"decided_by"})


def _person(name: str, value: Any, *, importer: AbstractBaseUser) -> int | None:
    """A person field of an imported row: the importer where the row names its author, empty where it names someone
    else's decision. Never a user matched by the document's username: the file could name anyone of this server."""
    if not value or name in SOMEONE_ELSE:
        return None
    return int(importer.pk)


def _sources(value: Any, *, importer: AbstractBaseUser) -> Any:
    """A memory's provenance entries stamp the user and token ids of the server that saved it; here they would name
    whoever has those ids on this one. The importer is stamped instead, the original ids kept beside as `imported`."""
    if not isinstance(value, list):
        return value
    return [
        {
            **entry,
            "user_id": int(importer.pk),
            "token_id": None,
            "imported": {"user_id": entry.get("user_id"), "token_id": entry.get("token_id")},
        }
        if isinstance(entry, dict)
        else entry
        for entry in value
    ]


def _op_record(row: dict[str, Any], *, palace: Palace, ids: dict[str, dict[int, int]], now: datetime) -> dict[str, Any]:
    """An exported op row as the read-only record an import keeps: actor kind `import` (the person field maps to the
    importer in _copy), written now, its target the new row's id or none, and what the row said under
    `detail["imported"]` (the detail nested there, so ids it quotes, e.g. a revert's `reverts`, match nothing here)."""
    original = {
        name: row.get(name)
        for name in ("id", "actor_kind", "actor_user", "actor_name", "actor_token_label", "target_kind", "target_id")
    }
    original["created_at"] = row.get("created_at")
    original["detail"] = row.get("detail")
    kind, target = row.get("target_kind"), row.get("target_id")
    section = OP_TARGETS.get(kind or "")
    if kind == "palace" and target is not None:
        target = palace.pk
    elif section and target is not None:
        target = ids[section].get(target)  # a row the document does not hold is dropped, never kept as it was
    else:
        target = None  # other kinds' ids are the other server's
    return {
        **row,
        "actor_kind": OpLog.ActorKind.IMPORT,
        "actor_user": row.get("actor_user") or "import",  # a non-empty author: the importer (_person)
        "actor_token_id": None,
        "actor_token_label": "",
        "actor_name": "import",
        "target_id": target,
        "created_at": now.isoformat(),
        "request_id": "",
        "detail": {"imported": original},
    }


# --- merge ------------------------------------------------------------------------------------------------------


def _merge(*, section: dict[str, Any], palace: Palace, actor: Actor, now: datetime) -> PalaceImport:
    """Merge mode: the section's active memories as one bulk save (memory.save.memory_save_bulk: the rules judge, and
    each contradiction it opens keeps their ruling, labelled `bulk`). An item the pipeline refuses fails the import."""
    report = PalaceImport(palace_id=palace.pk, label=palace.label, mode="merge")
    skipped: Counter[str] = Counter()
    items: list[SaveItem] = []
    exported_ids: list[Any] = []
    for memory in section.get("memories", []):
        if memory.get("status") != Memory.Status.ACTIVE:
            skipped[f"memories: {memory.get('status')}"] += 1
            continue
        items.append(
            SaveItem(
                content=memory["content"],
                kind=memory["kind"],
                placard=memory.get("placard") or "",
                occurred_at=datetime.fromisoformat(memory["occurred_at"]) if memory.get("occurred_at") else None,
                speaker=memory.get("speaker") or "",
                importance=memory.get("importance"),
            )
        )
        exported_ids.append(memory.get("id"))
    result = memory_save_bulk(palace=palace, actor=actor, items=items, source="import", now=now)
    for item in result.items:
        if isinstance(item, ItemError):  # the import lands entirely or not at all
            raise InvalidInput(f"memory {exported_ids[item.index]} of the export was refused: {item.message}")
    report.dispositions = dict(Counter(r.disposition for r in result.items if isinstance(r, SaveResult)))
    for table in TABLES:
        if table.section != "memories" and section.get(table.section):
            skipped[f"{table.section}: not merged"] += len(section[table.section])
    report.skipped = dict(skipped)
    return report
