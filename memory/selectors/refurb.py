"""The refurb list: placards of a palace scored by the unique · dated · distinctive rule, the low ones with a hint.

A palace with fewer than 8 active memories is not scanned (in a small store every cue is easy to tell apart, and
flagging them would be noise); the result says so rather than returning an empty list that reads as "all good".
Memories without a placard are counted, not listed: a placard is optional.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np
from django.db import connection

from memory.models import Memory
from palace.models import Palace, Room
from palace.placards import (
    PREFIX_CHARS,
    REFURB_BELOW,
    REFURB_MIN_ACTIVE,
    PlacardScore,
    has_date_anchor,
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
    low: int = 0  # every placard below the threshold, also those beyond the listed `items`


@functools.lru_cache(maxsize=32768)
def _placard_facts(placard: str) -> tuple[str, bool, str]:
    """A placard's compared form, whether it has a date anchor, and its prefix: pure, so kept across scans."""
    norm = normalize(placard)
    return norm, has_date_anchor(placard), norm[:PREFIX_CHARS]


def refurb_list(*, palace: Palace, limit: int = 100) -> RefurbList:
    """Active placarded memories scoring below REFURB_BELOW, worst first, each with its rewrite hints.

    Every low placard is counted (`low`, for a clarity figure) but only the `limit` worst memories are loaded.
    The scan reads (id, placard, room) tuples, not model instances, and scores them in one pass:
    1. normalise each placard and test its date anchor (cached per placard text);
    2. count the memories per normalised placard (unique?) and per room and 6-character prefix (clash?);
    3. score with the rule's 4/3/3 points (tenths), keep the `limit` lowest (points, id);
    4. load those memories and score them with placard_score, which also writes their hints.
    (Scoring in SQL was tried and measured slower: PostgreSQL's NFKC and regular expressions cost several
    times Python's per placard.)
    """
    active_qs = Memory.objects.filter(palace=palace, status=Memory.Status.ACTIVE)
    # One read of every active memory (the count comes with it): raw tuples, no model machinery per row.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, m.placard, s.room_id FROM memory_memory m LEFT JOIN palace_slot s ON s.id = m.slot_id"
            " WHERE m.palace_id = %s AND m.status = %s",
            [palace.pk, Memory.Status.ACTIVE],
        )
        rows = cursor.fetchall()
    active = len(rows)
    if active < REFURB_MIN_ACTIVE:
        return RefurbList(
            scanned=False,
            reason=f"not scanned: {active} active memories, fewer than {REFURB_MIN_ACTIVE}",
            active=active,
            placarded=sum(1 for _, placard, _ in rows if placard),
            threshold=REFURB_BELOW,
        )
    # Column-wise, with map/zip/Counter and numpy doing the per-memory work in C: at 10,000 memories a row-wise
    # Python loop was most of the scan (30-40 ms).
    placarded = [row for row in rows if row[1]]
    ids, placards, rooms = (list(column) for column in zip(*placarded, strict=True)) if placarded else ([], [], [])
    facts = list(map(_placard_facts, placards))
    norms = list(map(itemgetter(0), facts))
    keys = list(zip(rooms, map(itemgetter(2), facts), strict=True))
    same = Counter(norms)
    in_room = Counter(keys)
    points = (
        4 * (np.fromiter(map(same.__getitem__, norms), dtype=np.int32, count=len(norms)) == 1)
        + 3 * np.fromiter(map(itemgetter(1), facts), dtype=np.int32, count=len(facts))
        + 3 * (np.fromiter(map(in_room.__getitem__, keys), dtype=np.int32, count=len(keys)) == 1)
    ) * np.fromiter(map(bool, norms), dtype=np.int32, count=len(norms))  # an empty compared form scores 0
    low_at = np.flatnonzero(points < round(REFURB_BELOW * 10))
    ranked = low_at[np.lexsort((np.asarray(ids, dtype=np.int64)[low_at], points[low_at]))][: max(0, limit)]
    worst = [(int(points[i]), ids[i], rooms[i], norms[i]) for i in ranked]
    found = (
        active_qs.select_related("slot__room")
        .only("id", "placard", "slot", "created_at")
        .in_bulk([pk for _, pk, _, _ in worst])
    )
    # For the hints: one other placard sharing each listed memory's room and prefix.
    clashing = {(room_id, norm[:PREFIX_CHARS]) for _, _, room_id, norm in worst}
    others: dict[tuple[int | None, str], list[tuple[int, str]]] = defaultdict(list)
    if clashing:
        for i, key in enumerate(keys):
            if key in clashing and len(others[key]) < 2:
                others[key].append((ids[i], placards[i]))
    items = []
    for _, pk, room_id, norm in worst:
        memory = found.get(pk)
        if memory is None:  # changed between the two reads
            continue
        neighbours = [p for o, p in others[(room_id, norm[:PREFIX_CHARS])] if o != pk][:1]
        score = placard_score(
            placard=memory.placard,
            room=memory.slot.room.name if memory.slot is not None else "",
            palace_placards=[memory.placard] if same[norm] > 1 else [],
            room_placards=neighbours,
        )
        items.append(RefurbItem(memory=memory, score=score))
    items.sort(key=lambda i: (i.score.score, i.memory.pk))
    return RefurbList(
        scanned=True,
        reason="",
        active=active,
        placarded=len(placarded),
        threshold=REFURB_BELOW,
        items=items,
        low=len(low_at),
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
