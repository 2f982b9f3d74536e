"""The op log's four categories (the seed's writes / capture / retrieval / organize): which category an op belongs to,
and the filter that selects one category's rows. Data about ops, so the REST door and the panel's Log can filter by
category alike; how a category or an op is named on screen is the panel's business (panel/labels.py).
"""

from __future__ import annotations

from django.db.models import Q

CATEGORIES = ("writes", "capture", "retrieval", "organize")

# Known operations and their category. Unknown ops fall back by prefix (see op_category).
OP_CATEGORY: dict[str, str] = {
    "memory.save": "writes",
    "memory.accept": "writes",
    "memory.merge": "writes",
    "memory.defer": "writes",
    "memory.drop": "writes",
    "memory.update": "writes",
    "memory.supersede": "organize",
    "memory.forget": "writes",
    "memory.restore": "writes",
    "memory.report": "retrieval",
    "memory.assess": "retrieval",
    "memory.archive": "organize",
    "memory.decay": "organize",
    "memory.distill": "organize",
    "memory.embed": "organize",
    "memory.placard": "writes",
    "memory.slot": "organize",
    "review.grade": "retrieval",
    "review.enrol": "organize",
    "review.reveal": "retrieval",
    "review.unenrol": "organize",
    "evidence.assess": "retrieval",
    "embeddings.backfill": "organize",
    "slots.backfill": "organize",
    "edge.create": "organize",
    "edge.decide": "organize",
    "room.open": "organize",
    "room.rename": "organize",
    "slot.backfill": "organize",
    "capture.turn": "capture",
    "capture.session": "capture",
    "backfill.run": "capture",
    "palace.create": "organize",
    "project.request": "organize",
    "project.approve": "organize",
    "project.decline": "organize",
    "member.set": "organize",
    "member.invite": "organize",
    "member.accept": "organize",
    "member.decline": "organize",
    "member.remove": "organize",
    "member.leave": "organize",
    "member.transfer": "organize",
    "user.create": "organize",
    "token.create": "organize",
    "token.revoke": "organize",
    "profile.edit": "writes",
    "profile.rollback": "writes",
    "handoff.save": "writes",
    "handoff.checkout": "writes",
}
PREFIX_CATEGORY = {"capture": "capture", "backfill": "capture", "review": "retrieval", "search": "retrieval"}


def op_category(op: str) -> str:
    if op in OP_CATEGORY:
        return OP_CATEGORY[op]
    prefix = op.split(".", 1)[0]
    return PREFIX_CATEGORY.get(prefix, "writes" if prefix == "memory" else "organize")


def category_filter(category: str) -> Q:
    """Ops of one category: the known ops in it plus unknown ops that its prefix rule claims (op_category's rule,
    as a filter)."""
    known = list(OP_CATEGORY)
    q = Q(op__in=[op for op in known if OP_CATEGORY[op] == category])
    unknown = ~Q(op__in=known)
    prefixes = {p for p, c in PREFIX_CATEGORY.items() if c == category}
    if category == "writes":
        prefixes.add("memory")
    for prefix in prefixes:
        q |= unknown & Q(op__startswith=f"{prefix}.")
    if category == "organize":
        claimed = Q()
        for prefix in [*PREFIX_CATEGORY, "memory"]:
            claimed |= Q(op__startswith=f"{prefix}.")
        q |= unknown & ~claimed
    return q
