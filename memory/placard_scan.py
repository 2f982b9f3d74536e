"""The refurb list: placards of a palace scored by the unique · dated · distinctive rule, the low ones with a hint.

A palace with fewer than 8 active memories is not scanned (in a small store every cue is easy to tell apart, and
flagging them would be noise); the result says so rather than returning an empty list that reads as "all good".
Memories without a placard are counted, not listed: a placard is optional.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from memory.models import Memory
from palace.models import Palace, Room
from palace.placards import (
    PREFIX_CHARS,
    REFURB_BELOW,
    REFURB_MIN_ACTIVE,
    PlacardScore,
    normalize,
    placard_score,
)


@dataclass
class RefurbItem:
    memory: Memory
    score: PlacardScore

    @property
    def coordinate(self) -> str:
        return self.memory.slot.coordinate if self.memory.slot is not None else ""


@dataclass
class RefurbList:
    scanned: bool
    reason: str  # why not scanned, "" when scanned
    active: int
    placarded: int
    threshold: float
    items: list[RefurbItem] = field(default_factory=list)


def _score_all(memories: list[Memory]) -> dict[int, PlacardScore]:
    """Score every placarded memory against the others in one pass: group by placard and by (room, prefix), so a
    palace of n memories costs O(n), not O(n²)."""
    by_placard: dict[str, list[Memory]] = defaultdict(list)
    by_prefix: dict[tuple[int | None, str], list[Memory]] = defaultdict(list)
    for m in memories:
        own = normalize(m.placard)
        by_placard[own].append(m)
        by_prefix[(m.slot.room_id if m.slot is not None else None, own[:PREFIX_CHARS])].append(m)
    scores = {}
    for m in memories:
        own = normalize(m.placard)
        room_id = m.slot.room_id if m.slot is not None else None
        # One other memory is enough to lose the points (and to name in the hint).
        palace_others = [o.placard for o in by_placard[own] if o.pk != m.pk][:1]
        room_others = [o.placard for o in by_prefix[(room_id, own[:PREFIX_CHARS])] if o.pk != m.pk][:1]
        scores[m.pk] = placard_score(
            placard=m.placard,
            room=m.slot.room.name if m.slot is not None else "",
            palace_placards=palace_others,
            room_placards=room_others,
        )
    return scores


def refurb_list(*, palace: Palace, limit: int = 100) -> RefurbList:
    """Active placarded memories scoring below REFURB_BELOW, worst first, each with its rewrite hints."""
    active_qs = Memory.objects.filter(palace=palace, status=Memory.Status.ACTIVE)
    active = active_qs.count()
    if active < REFURB_MIN_ACTIVE:
        return RefurbList(
            scanned=False,
            reason=f"not scanned: {active} active memories, fewer than {REFURB_MIN_ACTIVE}",
            active=active,
            placarded=active_qs.exclude(placard="").count(),
            threshold=REFURB_BELOW,
        )
    memories = list(
        active_qs.exclude(placard="").select_related("slot__room").only("id", "placard", "slot", "created_at")
    )
    scores = _score_all(memories)
    low = [RefurbItem(memory=m, score=scores[m.pk]) for m in memories if scores[m.pk].needs_refurb]
    low.sort(key=lambda i: (i.score.score, i.memory.pk))
    return RefurbList(
        scanned=True, reason="", active=active, placarded=len(memories), threshold=REFURB_BELOW, items=low[:limit]
    )


def placard_score_in_palace(
    *, palace: Palace, placard: str, room: Room | None, exclude_id: int | None = None
) -> PlacardScore:
    """Score one placard (e.g. at write time, for a save's rewrite hint) against the palace's active memories."""
    others = Memory.objects.filter(palace=palace, status=Memory.Status.ACTIVE).exclude(placard="")
    if exclude_id is not None:
        others = others.exclude(pk=exclude_id)
    own = normalize(placard)
    same = [p for p in others.values_list("placard", flat=True) if normalize(p) == own][:1]
    room_placards: list[str] = []
    if room is not None:
        room_placards = [
            p
            for p in others.filter(slot__room=room).values_list("placard", flat=True)
            if normalize(p)[:PREFIX_CHARS] == own[:PREFIX_CHARS]
        ][:1]
    return placard_score(
        placard=placard, room=room.name if room is not None else "", palace_placards=same, room_placards=room_placards
    )
