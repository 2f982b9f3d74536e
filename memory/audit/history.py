"""A memory's whole history for the audit console (memory/admin/audit.py): the versions of its supersede chain, a
distilled rule's members, the edges, every op row about any of them, and the retrievals that returned it.

A read for staff: the caller runs it inside the admin's system context (every palace visible). Bodies are left on
the rows; whether a page shows them is the page's business (`memory.view_memory_body`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q

from memory.models import AccessRecord, Edge, Memory
from memory.selectors import Chain, memory_chain
from palace.errors import NotFound
from palace.models import OpLog

MAX_VERSIONS = 200  # each way; a longer chain is cut (the page says so)
MAX_OPS = 500
MAX_ACCESSES = 200


@dataclass
class History:
    memory: Memory
    chain: Chain
    members: list[Memory] = field(default_factory=list)  # a distilled rule's sources
    rule: Memory | None = None  # the rule this memory was distilled into, if any
    edges: list[Edge] = field(default_factory=list)
    ops: list[OpLog] = field(default_factory=list)
    accesses: list[AccessRecord] = field(default_factory=list)
    cut: bool = False  # a list was longer than shown

    @property
    def versions(self) -> list[Memory]:
        return self.chain.newest_first


def memory_history(*, memory_id: int) -> History:
    memory = Memory.objects.select_related("palace").filter(pk=memory_id).first()
    if memory is None:
        raise NotFound("memory not found")
    chain = memory_chain(memory=memory, depth=MAX_VERSIONS)
    history = History(memory=memory, chain=chain)
    member_ids = [int(i) for i in (memory.meta or {}).get("distilled_from", [])]
    if member_ids:
        history.members = list(Memory.objects.filter(pk__in=member_ids).order_by("pk"))
    rule_edge = Edge.objects.filter(to_memory_id=memory.pk, kind=Edge.Kind.SUPERSEDES).exclude(
        from_memory_id__in=chain.ids
    )
    rule_id = rule_edge.order_by("-pk").values_list("from_memory_id", flat=True).first()
    if rule_id is not None:
        history.rule = Memory.objects.filter(pk=rule_id).first()
    ids = chain.ids
    edges = (
        Edge.objects.filter(Q(from_memory_id__in=ids) | Q(to_memory_id__in=ids))
        .select_related("decided_by")
        .order_by("-created_at", "-pk")
    )
    history.edges = list(edges[:MAX_OPS])
    edge_ids = [e.pk for e in history.edges]
    about = Q(target_kind="memory", target_id__in=ids) | Q(target_kind="edge", target_id__in=edge_ids)
    ops = (
        OpLog.objects.filter(about)
        .select_related("actor_user", "palace__personal_owner")
        .order_by("-created_at", "-pk")
    )
    history.ops = list(ops[: MAX_OPS + 1])
    accesses = AccessRecord.objects.filter(memory_id__in=ids).select_related("user").order_by("-created_at", "-pk")
    history.accesses = list(accesses[: MAX_ACCESSES + 1])
    history.cut = (
        len(history.ops) > MAX_OPS
        or len(history.accesses) > MAX_ACCESSES
        or len(chain.older) >= MAX_VERSIONS
        or len(chain.newer) >= MAX_VERSIONS
    )
    history.ops = history.ops[:MAX_OPS]
    history.accesses = history.accesses[:MAX_ACCESSES]
    return history
