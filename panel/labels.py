"""Display names for stored values. Data stays English in the database; it is translated only here."""

from __future__ import annotations

import re

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

KINDS = ("fact", "preference", "decision", "episode", "skill")

KIND_LABELS: dict[str, Promise] = {
    "fact": _("fact"),
    "preference": _("preference"),
    "decision": _("decision"),
    "episode": _("episode"),
    "skill": _("skill"),
}

STATUS_LABELS: dict[str, Promise] = {
    "active": _("active"),
    "archived": _("archived"),
    "forgotten": _("forgotten"),
    "superseded": _("superseded"),
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

# The Log's four categories (the seed's writes / capture / retrieval / organize).
CATEGORIES: dict[str, Promise] = {
    "writes": _("writes"),
    "capture": _("capture"),
    "retrieval": _("retrieval"),
    "organize": _("organize"),
}

# Known operations: a readable label and a category. Unknown ops fall back by prefix (see op_category).
OPS: dict[str, tuple[Promise, str]] = {
    "memory.save": (_("Saved a memory"), "writes"),
    "memory.accept": (_("Saved a memory"), "writes"),
    "memory.merge": (_("Merged a restatement"), "writes"),
    "memory.defer": (_("Saved a possible contradiction"), "writes"),
    "memory.drop": (_("Dropped low-content text"), "writes"),
    "memory.update": (_("Corrected a memory"), "writes"),
    "memory.supersede": (_("Replaced by a distilled rule"), "organize"),
    "memory.forget": (_("Forgot a memory"), "writes"),
    "memory.restore": (_("Restored a memory"), "writes"),
    "memory.report": (_("Reported an outcome"), "retrieval"),
    "memory.assess": (_("Assessed search results"), "retrieval"),
    "memory.archive": (_("Archived an unused memory"), "organize"),
    "memory.decay": (_("Archived an unused memory"), "organize"),
    "memory.distill": (_("Distilled memories into a rule"), "organize"),
    "memory.embed": (_("Added a missing embedding"), "organize"),
    "memory.placard": (_("Changed a placard"), "writes"),
    "memory.slot": (_("Placed a memory in the palace"), "organize"),
    "review.grade": (_("Graded a review"), "retrieval"),
    "review.enrol": (_("Enrolled a memory for review"), "organize"),
    "review.reveal": (_("Revealed a review card"), "retrieval"),
    "review.unenrol": (_("Took a memory out of review"), "organize"),
    "evidence.assess": (_("Assessed search results"), "retrieval"),
    "embeddings.backfill": (_("Added missing embeddings"), "organize"),
    "slots.backfill": (_("Placed older memories in the palace"), "organize"),
    "edge.create": (_("Linked two memories"), "organize"),
    "edge.decide": (_("Decided a contradiction"), "organize"),
    "room.open": (_("Opened a new room"), "organize"),
    "room.rename": (_("Renamed a room"), "organize"),
    "slot.backfill": (_("Placed older memories in the palace"), "organize"),
    "capture.turn": (_("Captured a conversation turn"), "capture"),
    "capture.session": (_("Captured a session"), "capture"),
    "backfill.run": (_("Ran a history backfill"), "capture"),
    "palace.create": (_("Created a palace"), "organize"),
    "member.set": (_("Changed a membership"), "organize"),
    "member.remove": (_("Removed a member"), "organize"),
    "user.create": (_("Created a user"), "organize"),
    "token.create": (_("Created a token"), "organize"),
    "token.revoke": (_("Revoked a token"), "organize"),
    "profile.edit": (_("Edited the profile"), "writes"),
    "profile.rollback": (_("Rolled back the profile"), "writes"),
}
PREFIX_CATEGORY = {"capture": "capture", "backfill": "capture", "review": "retrieval", "search": "retrieval"}

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


def op_category(op: str) -> str:
    if op in OPS:
        return OPS[op][1]
    prefix = op.split(".", 1)[0]
    return PREFIX_CATEGORY.get(prefix, "writes" if prefix == "memory" else "organize")


def op_label(op: str) -> str:
    if op in OPS:
        return str(OPS[op][0])
    return op.replace(".", " ").replace("_", " ").capitalize()


def ops_in_category(category: str, known: list[str]) -> list[str]:
    return [op for op in known if op_category(op) == category]


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
