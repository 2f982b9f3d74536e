"""Display names for stored values. Data stays English in the database; it is translated only here."""

from __future__ import annotations

import re

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from palace import kinds

KINDS = kinds.KINDS  # the one definition (palace.kinds); the labels below are only how the panel says them

KIND_LABELS: dict[str, Promise] = {
    kinds.MemoryKind.FACT: _("fact"),
    kinds.MemoryKind.PREFERENCE: _("preference"),
    kinds.MemoryKind.DECISION: _("decision"),
    kinds.MemoryKind.EPISODE: _("episode"),
    kinds.MemoryKind.SKILL: _("skill"),
}

STATUS_LABELS: dict[str, Promise] = {
    "active": _("active"),
    "archived": _("archived"),
    "forgotten": _("forgotten"),
    "superseded": _("superseded"),
}

# Entity kinds (memory.models.knowledge.Entity.Kind); kinds are extensible, an unknown one shows as stored.
ENTITY_KIND_LABELS: dict[str, Promise] = {
    "person": _("person"),
    "project": _("project"),
    "tool": _("tool"),
    "concept": _("concept"),
    "place": _("place"),
    "other": _("other"),
}

ROLE_LABELS: dict[str, Promise] = {"owner": _("owner"), "editor": _("editor"), "viewer": _("viewer")}

ROOM_LABELS: dict[str, Promise] = {
    "Fact Hall": _("Fact Hall"),
    "Preference Pavilion": _("Preference Pavilion"),
    "Decision Chamber": _("Decision Chamber"),
    "Episode Gallery": _("Episode Gallery"),
    "Skill Workshop": _("Skill Workshop"),
}
ROOM_RE = re.compile(r"^(?P<base>.+?)(?:-(?P<n>\d+))?$")

SOURCE_LABELS: dict[str, Promise] = {
    "mcp": _("MCP"),
    "rest": _("REST"),
    "panel": _("panel"),
    "capture": _("capture"),
    "backfill": _("backfill"),
    "import": _("import"),
    "distill": _("distillation"),
    "eval": _("evaluation"),
}

# The Log's four categories (palace.oplog.CATEGORIES), as the panel names them.
CATEGORIES: dict[str, Promise] = {
    "writes": _("writes"),
    "capture": _("capture"),
    "retrieval": _("retrieval"),
    "organize": _("organize"),
}

# Known operations: a readable label (which category an op belongs to is palace.oplog.categories).
OP_LABELS: dict[str, Promise] = {
    "entity.merge": _("Merged two entities"),
    "entity.rename": _("Renamed an entity"),
    "entity.aliases": _("Edited an entity's aliases"),
    "entity.kind": _("Changed an entity's kind"),
    "memory.save": _("Saved a memory"),
    "memory.accept": _("Saved a memory"),
    "memory.merge": _("Merged a restatement"),
    "memory.defer": _("Saved a possible contradiction"),
    "memory.drop": _("Dropped low-content text"),
    "memory.update": _("Corrected a memory"),
    "memory.supersede": _("Replaced by a distilled rule"),
    "memory.forget": _("Forgot a memory"),
    "memory.restore": _("Restored a memory"),
    "memory.report": _("Reported an outcome"),
    "memory.assess": _("Assessed search results"),
    "memory.archive": _("Archived an unused memory"),
    "memory.decay": _("Archived an unused memory"),
    "memory.distill": _("Distilled memories into a rule"),
    "memory.embed": _("Added a missing embedding"),
    "memory.placard": _("Changed a placard"),
    "memory.slot": _("Placed a memory in the palace"),
    "review.grade": _("Graded a review"),
    "review.enrol": _("Enrolled a memory for review"),
    "review.reveal": _("Revealed a review card"),
    "review.unenrol": _("Took a memory out of review"),
    "evidence.assess": _("Assessed search results"),
    "embeddings.backfill": _("Added missing embeddings"),
    "slots.backfill": _("Placed older memories in the palace"),
    "edge.create": _("Linked two memories"),
    "edge.decide": _("Decided a contradiction"),
    "edge.close": _("Closed a contradiction"),
    "memory.replace": _("Replaced by the newer memory"),
    "judge.settings": _("Changed the judge settings"),
    "room.open": _("Opened a new room"),
    "room.rename": _("Renamed a room"),
    "slot.backfill": _("Placed older memories in the palace"),
    "capture.turn": _("Captured a conversation turn"),
    "capture.session": _("Captured a session"),
    "backfill.run": _("Ran a history backfill"),
    "palace.create": _("Created a palace"),
    "member.set": _("Changed a membership"),
    "member.invite": _("Invited someone to a project"),
    "member.accept": _("Accepted an invitation"),
    "member.decline": _("Declined an invitation"),
    "member.remove": _("Removed a member"),
    "member.leave": _("Left a project"),
    "member.transfer": _("Transferred ownership"),
    "user.create": _("Created a user"),
    "token.create": _("Created a token"),
    "token.revoke": _("Revoked a token"),
    "profile.edit": _("Edited the profile"),
    "profile.rollback": _("Rolled back the profile"),
    "handoff.save": _("Saved a handoff"),
    "handoff.checkout": _("Brought back an earlier handoff"),
}

DETAIL_LABELS: dict[str, Promise] = {
    "kind": _("kind"),
    "room": _("room"),
    "slot": _("slot"),
    "coordinate": _("place"),
    "disposition": _("outcome"),
    "merged_into": _("merged into"),
    "supersedes": _("replaces"),
    "superseded_by": _("replaced by"),
    "contradicts": _("may contradict"),
    "redactions": _("redacted"),
    "grade": _("grade"),
    "interval_days": _("next in (days)"),
    "source": _("source"),
    "role": _("role"),
    "previous": _("before"),
    "user": _("user"),
    "origin": _("origin"),
    "owner": _("owner"),
    "label": _("label"),
    "scope": _("scope"),
    "warning": _("note"),
    "count": _("count"),
    "outcome": _("outcome"),
    "confidence": _("confidence"),
    "placard": _("placard"),
    "similarity": _("similarity"),
    "session": _("session"),
    "turn": _("turn"),
    "degraded": _("degraded"),
    "verdict": _("verdict"),
    "model": _("model"),
    "days_overdue": _("days overdue"),
    "repetitions": _("repetitions"),
    "due_at": _("next due"),
    "from_status": _("was"),
    "version": _("version"),
    "from_version": _("from version"),
    "memory_ids": _("memories"),
    "name": _("name"),
}
# Internal bookkeeping a person does not need in the Log.
HIDDEN_DETAIL = {"pid", "embedder_loaded_at", "claimed_adequate", "claimed_strategy", "valid_refs", "batch", "ease"}

DISPOSITION_LABELS: dict[str, Promise] = {
    "accept": _("accepted"),
    "merge": _("merged"),
    "defer": _("deferred"),
    "drop": _("dropped"),
}


def kind_label(kind: str) -> str:
    return str(KIND_LABELS.get(kind, kind))


def status_label(status: str) -> str:
    return str(STATUS_LABELS.get(status, status))


def room_label(name: str) -> str:
    """`Fact Hall-2` → `事实厅-2`; a room a person renamed keeps its name."""
    match = ROOM_RE.match(name)
    if match is None or match["base"] not in ROOM_LABELS:
        return name
    label = str(ROOM_LABELS[match["base"]])
    return f"{label}-{match['n']}" if match["n"] else label


def op_label(op: str) -> str:
    if op in OP_LABELS:
        return str(OP_LABELS[op])
    return op.replace(".", " ").replace("_", " ").capitalize()


def detail_pairs(detail: object) -> list[tuple[str, str]]:
    """A readable list of (label, value) from an op row's JSON detail: no braces, no nested dumps."""
    if not isinstance(detail, dict):
        return []
    pairs = []
    for key, value in detail.items():
        if value in (None, "", [], {}) or key in HIDDEN_DETAIL:
            continue
        if isinstance(value, list):
            shown = ", ".join(str(v) for v in value[:6]) + (" …" if len(value) > 6 else "")
        elif isinstance(value, dict):
            shown = ", ".join(f"{k} {v}" for k, v in list(value.items())[:4])
        elif key == "room" and isinstance(value, str):
            shown = room_label(value)
        elif key == "kind" and isinstance(value, str):
            shown = kind_label(value)
        elif key == "disposition" and isinstance(value, str):
            shown = str(DISPOSITION_LABELS.get(value, value))
        elif key in ("from_status", "status") and isinstance(value, str):
            shown = status_label(value)
        elif key == "source" and isinstance(value, str):
            shown = str(SOURCE_LABELS.get(value, value))
        elif key == "slot" and isinstance(value, str) and "#" in value:
            room, _sep, number = value.rpartition("#")
            shown = f"{room_label(room)}#{number}"
        elif key == "due_at" and isinstance(value, str):
            shown = value[:16].replace("T", " ")
        else:
            shown = str(value)
        label = str(DETAIL_LABELS.get(key, key.replace("_", " ")))
        pairs.append((label, shown[:160]))
    return pairs[:6]


SEARCH_MODES: dict[str, Promise] = {
    "hybrid": _("hybrid"),
    "lexical": _("full-text"),
    "semantic": _("semantic"),
    "none": _("no"),
}

# What a search falls back to when nothing matches (memory.search's fallbacks and "none"), as the panel says it.
FALLBACKS: dict[str, Promise] = {
    "none": _("show nothing"),
    "overview": _("show an overview"),
}

CAPTURE_MODES: dict[str, Promise] = {
    "off": _("off: keep nothing"),
    "light": _("light: your messages"),
    "eager": _("eager: the assistant's replies too"),
}
