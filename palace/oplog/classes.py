"""How the audit console reads op rows: which class of operation a row is (writes, corrections, forgetting and
restore, review, structure, admin, judge), which kind of actor wrote it (a person, a token, a system job, staff in the
admin), and what it changed (before → after), from the fields the writers put in `detail`.

Data about ops, like palace/oplog/categories.py (the panel's four categories), but finer: an auditor asks "what did
this token correct or forget", not "was it a write".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q

# (class, label), in the order the console lists them.
OP_CLASSES: tuple[tuple[str, str], ...] = (
    ("writes", "writes"),
    ("corrections", "corrections"),
    ("forgetting", "forgetting / restore"),
    ("review", "review and feedback"),
    ("structure", "structure"),
    ("admin", "admin"),
    ("judge", "judge"),
    ("other", "other"),
)

OP_CLASS: dict[str, str] = {
    "memory.save": "writes",
    "memory.merge": "writes",
    "memory.placard": "writes",
    "memory.update": "corrections",
    "memory.checkout": "corrections",
    "memory.replace": "corrections",
    "profile.edit": "corrections",
    "profile.rollback": "corrections",
    "memory.forget": "forgetting",
    "memory.restore": "forgetting",
    "memory.decay": "forgetting",
    "memory.archive": "forgetting",
    "memory.revert": "forgetting",
    "memory.bulk_revert": "forgetting",
    "memory.distill_undo": "forgetting",
    "memory.unsupersede": "forgetting",
    "memory.report": "review",
    "memory.reinforce": "review",
    "memory.assess": "review",
    "evidence.assess": "review",
    "memory.distill": "structure",
    "memory.supersede": "structure",
    "memory.slot": "structure",
    "memory.embed": "structure",
    "edge.create": "structure",
    "edge.close": "structure",
    "palace.create": "structure",
    "edge.decide": "judge",
}
# Ops not listed above fall to their prefix's class (so an op added later lands somewhere sensible).
PREFIX_CLASS: dict[str, str] = {
    "memory": "writes",
    "capture": "writes",
    "backfill": "writes",
    "review": "review",
    "evidence": "review",
    "room": "structure",
    "slot": "structure",
    "slots": "structure",
    "edge": "structure",
    "distill": "structure",
    "embeddings": "structure",
    "palace": "structure",
    "entity": "structure",
    "fact": "corrections",
    "profile": "corrections",
    "handoff": "writes",
    "member": "admin",
    "project": "admin",
    "user": "admin",
    "token": "admin",
    "admin": "admin",
    "judge": "judge",
}


def op_class(op: str) -> str:
    if op in OP_CLASS:
        return OP_CLASS[op]
    return PREFIX_CLASS.get(op.split(".", 1)[0], "other")


def op_class_filter(name: str) -> Q:
    """The rows of one class: its listed ops, plus unlisted ops whose prefix the class claims (op_class as a
    filter; "other" is whatever nothing claims)."""
    listed = list(OP_CLASS)
    q = Q(op__in=[op for op in listed if OP_CLASS[op] == name])
    unlisted = ~Q(op__in=listed)
    if name == "other":
        claimed = Q()
        for prefix in PREFIX_CLASS:
            claimed |= Q(op__startswith=f"{prefix}.")
        return q | (unlisted & ~claimed)
    for prefix, cls in PREFIX_CLASS.items():
        if cls == name:
            q |= unlisted & Q(op__startswith=f"{prefix}.")
    return q


# --- actors --------------------------------------------------------------------------------------------------------

ACTOR_CLASSES: tuple[tuple[str, str], ...] = (
    ("user", "a person (panel or REST session)"),
    ("token", "a token (agent, REST or MCP)"),
    ("job", "a system job or command"),
    ("staff", "staff in the admin"),
)


def actor_class_filter(name: str) -> Q:
    """Staff act in the admin as the system carrying their user (memory/admin/memories.py, memory/audit/revert.py); a
    job is the system with no user."""
    if name == "user":
        return Q(actor_kind="user")
    if name == "token":
        return Q(actor_kind="token")
    if name == "job":
        return Q(actor_kind="system", actor_user__isnull=True)
    if name == "staff":
        return Q(actor_kind="system", actor_user__isnull=False)
    return Q(pk__in=[])


def actor_label(*, actor_kind: str, actor_name: str, username: str, token_id: int | None, token_label: str) -> str:
    if actor_kind == "token":
        return f"{username or actor_name} via token {token_label or '?'} (#{token_id})"
    if actor_kind == "import":
        return f"import by {username}" if username else "import"
    if actor_kind == "system":
        return f"staff {username} ({actor_name})" if username else f"job:{actor_name}"
    return username or actor_name


# --- before / after ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    field: str
    before: Any
    after: Any


# The status an op leaves a memory in, where its detail says only where it came from.
STATUS_AFTER = {
    "memory.forget": "forgotten",
    "memory.restore": "active",
    "memory.decay": "archived",
    "memory.archive": "archived",
    "memory.supersede": "superseded",
    "memory.unsupersede": "active",
}
# (detail key before, detail key after, field shown), for every op.
PAIRS = (("from_status", "status", "status"), ("confidence_before", "confidence", "confidence"))
# Pairs that mean a change only for one op (elsewhere `from`/`to` are edge ends, not a rename).
OP_PAIRS = {
    "room.rename": (("from", "to", "name"),),
    "member.set": (("previous", "role", "role"),),
}


def _generic(detail: dict[str, Any]) -> list[Change]:
    """`before`/`after` objects, or `changes: {field: [old, new]}`, as a writer that records whole fields does."""
    out: list[Change] = []
    before, after = detail.get("before"), detail.get("after")
    if isinstance(before, dict) or isinstance(after, dict):
        b = before if isinstance(before, dict) else {}
        a = after if isinstance(after, dict) else {}
        out.extend(Change(str(k), b.get(k), a.get(k)) for k in sorted({*b, *a}))
    changes = detail.get("changes")
    if isinstance(changes, dict):
        for key, value in changes.items():
            if isinstance(value, list | tuple) and len(value) == 2:
                out.append(Change(str(key), value[0], value[1]))
            elif isinstance(value, dict) and ("before" in value or "after" in value):
                out.append(Change(str(key), value.get("before"), value.get("after")))
    return out


def before_after(*, op: str, detail: Any, target_id: int | None = None) -> list[Change]:
    """What an op row says it changed, or [] when its detail does not say (a save creates; it changes nothing)."""
    if not isinstance(detail, dict):
        return []
    out = _generic(detail)
    for before_key, after_key, field in (*PAIRS, *OP_PAIRS.get(op, ())):
        if before_key in detail:
            after = detail.get(after_key, STATUS_AFTER.get(op) if field == "status" else None)
            out.append(Change(field, detail[before_key], after))
    if op in ("memory.update", "memory.checkout") and "supersedes" in detail:
        out.append(Change("current version", f"#{detail['supersedes']}", f"#{target_id}"))
        if "from_version" in detail:
            out.append(Change("version", detail["from_version"], detail.get("version")))
    if op == "memory.replace" and "superseded_by" in detail:
        out.append(Change("status", "active", "superseded"))
    return out


def before_after_text(changes: list[Change]) -> str:
    return "; ".join(f"{c.field}: {_short(c.before)} → {_short(c.after)}" for c in changes)


def _short(value: Any) -> str:
    text = "—" if value is None or value == "" else str(value)
    return text if len(text) <= 60 else text[:59] + "…"
