"""Display names for stored values. Data stays English in the database; it is translated only here."""

from __future__ import annotations

import json
import re
from datetime import datetime

from django.utils import formats, timezone
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
    "fact.write": _("Wrote a fact"),
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
    "entity": _("entity"),
    "entities": _("entities"),
    "predicate": _("predicate"),
    "valid_from": _("valid from"),
    "valid_to": _("valid until"),
    "replaces": _("replaces"),
    "edges": _("edges"),
    "judged_by": _("judged by"),
    "importance": _("importance"),
    "by": _("found by"),
    "linked": _("linked"),
    "created": _("new"),
    "fallback": _("fallback"),
    "error": _("error"),
    "members": _("members"),
    "status": _("status"),
    "state": _("state"),
    "mode": _("mode"),
    "method": _("method"),
    "memory": _("memory"),
    "project": _("project"),
    "decision": _("decision"),
    "resolution": _("resolution"),
    "newer": _("newer"),
    "older": _("older"),
    "expires_at": _("expires"),
    "since": _("since"),
    "until": _("until"),
    "at": _("at"),
    "cutoff": _("cutoff"),
    "facts": _("facts"),
    "added": _("added"),
    "removed": _("removed"),
}
# Values that are words of the system (who found or judged something) in the display language.
VALUE_LABELS: dict[str, Promise] = {"rules": _("rules"), "model": _("model"), "agent": _("agent"), "off": _("off")}
ISO_MOMENT = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$")
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


def detail_pairs(detail: object) -> list[tuple[str, str, str]]:
    """A readable list of (label, value, raw) from an op row's JSON detail: no braces, no Python lists, no ISO
    stamps (ids as #44, moments as a date in the display language and the server's time zone); `raw` is the stored
    value as JSON when it was reshaped (a list, a mapping, a moment: the Log puts it in a tooltip), else "" (a
    translated word keeps its English value out of the page)."""
    if not isinstance(detail, dict):
        return []
    pairs = []
    for key, value in detail.items():
        if _empty(value) or key in HIDDEN_DETAIL:
            continue
        if isinstance(value, dict):
            shown = " · ".join(f"{detail_label(k)} {_value(k, v)}" for k, v in list(value.items())[:5] if not _empty(v))
        else:
            shown = _value(key, value)
        reshaped = isinstance(value, (list, dict)) or (isinstance(value, str) and ISO_MOMENT.match(value))
        raw = json.dumps(value, ensure_ascii=False, default=str)[:400] if reshaped else ""
        pairs.append((detail_label(key), shown[:160], raw))
    return pairs[:6]


def detail_label(key: str) -> str:
    return str(DETAIL_LABELS.get(key, key.replace("_", " ")))


def _empty(value: object) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _value(key: str, value: object) -> str:
    """One detail value for a person to read."""
    if isinstance(value, bool):
        return str(_("yes") if value else _("no"))
    if isinstance(value, list):
        if value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            shown = [f"#{v}" for v in value[:6]]  # ids of memories, edges, entities
        else:
            shown = [_value(key, v) for v in value[:6]]
        return ", ".join(shown) + (" …" if len(value) > 6 else "")
    if isinstance(value, dict):
        return ", ".join(f"{detail_label(k)} {_value(k, v)}" for k, v in list(value.items())[:4])
    if not isinstance(value, str):
        return str(value)
    if ISO_MOMENT.match(value):
        return moment_label(value)
    if key == "room":
        return room_label(value)
    if key == "kind":
        return kind_label(value)
    if key == "disposition":
        return str(DISPOSITION_LABELS.get(value, value))
    if key in ("from_status", "status"):
        return status_label(value)
    if key == "source":
        return str(SOURCE_LABELS.get(value, value))
    if key == "slot" and "#" in value:
        room, _sep, number = value.rpartition("#")
        return f"{room_label(room)}#{number}"
    return str(VALUE_LABELS.get(value, value))


def moment_label(text: str) -> str:
    """An ISO 8601 date or date-time as the display language writes it, in the server's time zone; a moment at
    midnight (a date stored as a date-time) as the date alone. Unparseable text comes back as it was."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    if len(text) == 10:
        return formats.date_format(moment.date(), "DATE_FORMAT")
    midnight = (moment.hour, moment.minute, moment.second) == (0, 0, 0)
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    if midnight:  # a date written as a date-time: its own day, not shifted into another zone's evening
        return formats.date_format(moment.date(), "DATE_FORMAT")
    local = timezone.localtime(moment)
    return f"{formats.date_format(local, 'DATE_FORMAT')} {local:%H:%M}"


# The corridor's kinds of link between rooms (memory.selectors.LINK_KINDS), and a sentence for a count of each.
LINK_LABELS: dict[str, Promise] = {
    "supersede": _("supersedes"),
    "contradiction": _("contradiction"),
    "next": _("next turn"),
    "related": _("related"),
    "entity": _("shared entity"),
}


def link_label(kind: str) -> str:
    return str(LINK_LABELS.get(kind, kind))


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
