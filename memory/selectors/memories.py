"""Reading memories and their history: one memory, pages of them, the supersede chain, edges, the op rows of a
memory's history, episodes. REST, MCP and the panel all read through here, with the same cursors.

Palaces are resolved through palace.selectors, never here: a `palaces` argument is what the caller's access check
returned (palace_get, palaces_with_roles); `user` alone means every palace the user may read. Invisible answers
exactly like nonexistent.

Lists are keyset-paginated with opaque cursors (urlsafe base64 of the last row's sort key), so a page costs the same
at row 100,000 as at row 1.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db.models import Count, F, Max, Min, Q, QuerySet
from django.utils import timezone

from memory.models import DistillProposal, Edge, Memory
from palace.errors import InvalidInput, NotFound
from palace.models import OpLog, Palace, Room
from palace.selectors import palace_get, palace_ids_readable, palaces_readable

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    User = AbstractBaseUser | AnonymousUser | None

MAX_PAGE = 200
STATUSES = tuple(Memory.Status.values)
ORDERS = ("new", "route")  # newest first; along the palace's tour route
# A list that shows none of them never loads the heavy columns (a 384-float vector, the derived search texts).
HEAVY = ("embedding", "search_vector", "search_text", "sources", "meta")
EDGE_LIMIT = 20
HISTORY_OPS = 50


def _visible(user: User) -> QuerySet[Memory]:
    return Memory.objects.filter(palace__in=palaces_readable(user=user).values("pk"))


def memory_get(*, user: User, memory_id: int, write: bool = False) -> Memory:
    """One memory the user may read (with its palace and slot); NotFound when it does not exist or is invisible.

    With `write`, the user must also be an owner or editor of its palace (PermissionDenied for a viewer): a door's
    early check before it calls a service, which checks again under the row lock
    (memory.lifecycle.corrections.memory_lock).
    """
    memory = _visible(user).select_related("palace", "slot__room").filter(pk=memory_id).first()
    if memory is None:
        raise NotFound("memory not found")
    if write:
        palace_get(user=user, palace_id=memory.palace_id, write=True)
    return memory


def memories_by_id(*, palace_ids: Sequence[int], ids: Sequence[int]) -> dict[int, Memory]:
    """The memories among `ids` that live in `palace_ids` (resolved by the caller), by id; the others are absent."""
    return {m.pk: m for m in Memory.objects.filter(pk__in=ids, palace_id__in=palace_ids).select_related("slot__room")}


# --- cursors -----------------------------------------------------------------------------------------------------


def _encode(*parts: object) -> str:
    raw = "|".join(str(p) for p in parts).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(cursor: str, parts: int) -> list[str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidInput("cursor is not one this server issued", field="cursor") from exc
    found = raw.rsplit("|", parts - 1)
    if len(found) != parts:
        raise InvalidInput("cursor is not one this server issued", field="cursor")
    return found


_NOT_OURS = "cursor is not one this server issued"
_BIGINT_MAX = 2**63 - 1  # ids and sequence numbers are PostgreSQL bigints


def _stamp(raw: str) -> datetime:
    """An aware moment PostgreSQL can hold. A hand-made cursor may carry year 1 with offset -23:59 or year 9999 with
    +23:59, which Python parses but which overflow in UTC (a 500 from the database, not a bad cursor)."""
    moment = datetime.fromisoformat(raw)
    if moment.tzinfo is None:
        raise ValueError("a cursor's time carries its offset")
    try:
        return moment.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError("out of range") from exc


def _id(raw: str) -> int:
    """A non-negative bigint written in ASCII digits (int() also reads '١٢٣', '+5' and '1_0')."""
    if not (raw.isascii() and raw.isdigit()) or int(raw) > _BIGINT_MAX:
        raise ValueError("not an id")
    return int(raw)


def _after_new(cursor: str) -> tuple[datetime, int]:
    stamp, pk = _decode(cursor, 2)
    try:
        return _stamp(stamp), _id(pk)
    except ValueError as exc:
        raise InvalidInput(_NOT_OURS, field="cursor") from exc


def _after_route(cursor: str) -> tuple[int, int, int]:
    try:
        palace_id, seq, pk = (_id(p) for p in _decode(cursor, 3))
    except ValueError as exc:
        raise InvalidInput(_NOT_OURS, field="cursor") from exc
    return palace_id, seq, pk


def _after_episodes(cursor: str) -> datetime:
    try:
        return _stamp(_decode(cursor, 1)[0])
    except ValueError as exc:
        raise InvalidInput(_NOT_OURS, field="cursor") from exc


_CURSORS = {"new": _after_new, "route": _after_route, "episodes": _after_episodes}


def cursor_ok(cursor: str, *, order: str) -> bool:
    """Whether `cursor` is one a list in `order` ("new", "route" or "episodes") issued: for a door (the panel's
    filters) that starts over at the first page rather than answering a stale link with an error."""
    try:
        _CURSORS[order](cursor)
    except InvalidInput:
        return False
    return True


# --- pages of memories -------------------------------------------------------------------------------------------


@dataclass
class MemoryPage:
    items: list[Memory]
    next_cursor: str | None


def memory_list(
    *,
    user: User,
    palaces: Sequence[Palace] | None = None,
    kind: str | None = None,
    room: str | int | None = None,
    status: str | None = "active",
    ids: Sequence[int] | None = None,
    order: str = "new",
    cursor: str | None = None,
    limit: int = 50,
    slim: bool = False,
) -> MemoryPage:
    """Memories of `palaces` (default: every palace the user may read), keyset-paginated.

    `order` "new" is newest first: the cursor is (created_at, id) of the last row, and the
    `memory_palace_status_time` index serves the order and the cursor comparison. "route" follows the palaces' tour
    routes (palace, then route position); unplaced memories are not on a route. `status=None` lists every status;
    `room` is a room id or its name ("Fact Hall-2"); `ids` narrows to those memories (e.g. the ones due for
    review); `slim` leaves out the heavy columns (HEAVY) for a list that shows none of them.
    """
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"limit is 1..{MAX_PAGE}", field="limit")
    if kind is not None and kind not in Memory.Kind.values:
        raise InvalidInput(f"kind must be one of {', '.join(Memory.Kind.values)}", field="kind")
    if status is not None and status not in STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(STATUSES)}", field="status")
    if order not in ORDERS:
        raise InvalidInput(f"order must be one of {', '.join(ORDERS)}", field="order")
    palace_ids = sorted(palace_ids_readable(user=user)) if palaces is None else sorted({p.pk for p in palaces})
    qs = Memory.objects.all()
    if status is not None:
        qs = qs.filter(status=status)
    if kind is not None:
        qs = qs.filter(kind=kind)
    if room is not None:
        qs = qs.filter(slot__room_id=room) if isinstance(room, int) else qs.filter(slot__room__name=room)
    if ids is not None:
        qs = qs.filter(pk__in=ids)
    if order == "route":
        return _route_page(qs.filter(palace_id__in=palace_ids), cursor=cursor, limit=limit, slim=slim)
    return _new_page(qs, palace_ids=palace_ids, cursor=cursor, limit=limit, slim=slim)


def _rows(qs: QuerySet[Memory], *, slim: bool) -> QuerySet[Memory]:
    qs = qs.select_related("slot__room")
    return qs.defer(*HEAVY) if slim else qs


def _new_page(qs: QuerySet[Memory], *, palace_ids: list[int], cursor: str | None, limit: int, slim: bool) -> MemoryPage:
    if cursor:
        stamp, pk = _after_new(cursor)
        # A range on created_at the index can serve, then the tie on the same instant broken by id.
        qs = qs.filter(created_at__lte=stamp).exclude(created_at=stamp, pk__gte=pk)
    order = ("-created_at", "-id")
    if len(palace_ids) <= 1:
        rows = list(_rows(qs.filter(palace_id__in=palace_ids), slim=slim).order_by(*order)[: limit + 1])
    else:
        # One index range scan per palace, merged: "palace_id IN (...) ORDER BY created_at" cannot use the
        # (palace, status, created_at) index for order and sorts every matching row (~100 ms at 100k rows).
        parts = [
            qs.filter(palace_id=pid).order_by(*order).values_list("id", "created_at")[: limit + 1] for pid in palace_ids
        ]
        merged = parts[0].union(*parts[1:], all=True).order_by(*order)[: limit + 1]
        found = [pk for pk, _ in merged]
        by_id = _rows(Memory.objects.all(), slim=slim).in_bulk(found)
        rows = [by_id[pk] for pk in found]
    more = len(rows) > limit
    rows = rows[:limit]
    last = rows[-1] if more and rows else None
    return MemoryPage(items=rows, next_cursor=_encode(last.created_at.isoformat(), last.pk) if last else None)


def _route_page(qs: QuerySet[Memory], *, cursor: str | None, limit: int, slim: bool) -> MemoryPage:
    # Walk the route index (tour stop: palace, seq) rather than sorting every memory.
    routed = _rows(qs, slim=slim).filter(slot__tour_stop__isnull=False)
    routed = routed.annotate(route_palace=F("slot__tour_stop__palace_id"), seq=F("slot__tour_stop__seq"))
    if cursor:
        pal, seq, pk = _after_route(cursor)
        routed = routed.filter(
            Q(route_palace__gt=pal) | Q(route_palace=pal, seq__gt=seq) | Q(route_palace=pal, seq=seq, pk__gt=pk)
        )
    rows: list[Memory] = [*routed.order_by("route_palace", "seq", "id")[: limit + 1]]
    more = len(rows) > limit
    rows = rows[:limit]
    last = rows[-1] if more and rows else None
    nxt = _encode(last.palace_id, getattr(last, "seq", 0), last.pk) if last is not None else None
    return MemoryPage(items=rows, next_cursor=nxt)


# --- history: the supersede chain, edges, op rows ----------------------------------------------------------------


@dataclass
class Chain:
    """A memory's correction history."""

    memory: Memory
    older: list[Memory]  # the versions it replaced, newest first
    newer: list[Memory]  # the versions that replaced it, oldest first

    @property
    def newest_first(self) -> list[Memory]:
        return [*reversed(self.newer), self.memory, *self.older]

    @property
    def ids(self) -> list[int]:
        return [m.pk for m in self.newest_first]


def memory_chain(*, memory: Memory, depth: int | None = None, slim: bool = False) -> Chain:
    """Walk the supersede links from a memory the caller may read, both ways, within its palace: one query a step,
    at most `depth` steps each way (None: to the end; a memory seen twice ends the walk)."""
    rows = _rows(Memory.objects.filter(palace_id=memory.palace_id), slim=slim)
    seen = {memory.pk}
    older: list[Memory] = []
    current: Memory | None = memory
    while current is not None and current.supersedes_id is not None and (depth is None or len(older) < depth):
        current = rows.filter(pk=current.supersedes_id).first()
        if current is None or current.pk in seen:
            break
        seen.add(current.pk)
        older.append(current)
    newer: list[Memory] = []
    current = memory
    while current is not None and (depth is None or len(newer) < depth):
        current = rows.filter(supersedes_id=current.pk).order_by("pk").first()
        if current is None or current.pk in seen:
            break
        seen.add(current.pk)
        newer.append(current)
    return Chain(memory=memory, older=older, newer=newer)


def memory_supersede_chain(*, user: User, memory_id: int) -> list[Memory]:
    """The correction history of a memory, newest first: its successors, itself, its predecessors."""
    return memory_chain(memory=memory_get(user=user, memory_id=memory_id)).newest_first


def memory_successor_id(*, memory: Memory) -> int | None:
    """The id of the memory that corrected this one (the next link of its chain), if any."""
    successor = Memory.objects.filter(palace_id=memory.palace_id, supersedes_id=memory.pk).order_by("pk")
    return successor.values_list("pk", flat=True).first()


def memory_sources(*, user: User, memory_id: int) -> list[dict[str, Any]]:
    """Every source a memory absorbed (its own first, then each merged restatement), oldest first."""
    return list(memory_get(user=user, memory_id=memory_id).sources)


def memory_edges(*, memory: Memory, kind: str | None = None, limit: int | None = EDGE_LIMIT) -> list[Edge]:
    """The edges from and to a memory (of one `kind` if given), newest first, with both memories loaded."""
    both = Q(from_memory_id=memory.pk) | Q(to_memory_id=memory.pk)
    rows = Edge.objects.filter(both, palace_id=memory.palace_id).select_related("from_memory", "to_memory")
    if kind is not None:
        rows = rows.filter(kind=kind)
    rows = rows.order_by("-created_at", "-pk")
    return list(rows if limit is None else rows[:limit])


def memory_ops(*, chain: Chain, limit: int = HISTORY_OPS) -> list[OpLog]:
    """The op rows of a memory's whole history (every version of its chain), newest first."""
    rows = OpLog.objects.filter(target_kind="memory", target_id__in=chain.ids, palace_id=chain.memory.palace_id)
    return list(rows.order_by("-created_at", "-pk")[:limit])


# --- episodes and rooms --------------------------------------------------------------------------------------------

EPISODE_STATUSES = ("active", "archived")


@dataclass
class EpisodeGroup:
    palace_id: int
    session: str
    first: datetime
    last: datetime
    count: int
    entries: list[Memory]


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, datetime.min.time()))


def episode_groups(
    *,
    palace_ids: Sequence[int],
    start: date | None = None,
    end: date | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    session: str | None = None,
    cursor: str = "",
    groups: int = 10,
    per_group: int = 40,
) -> tuple[list[EpisodeGroup], str]:
    """Episodes grouped by source session, newest group first, entries in order inside each group; the groups and
    the cursor of the next page ("" at the end). Two reads: the session heads, then their entries.

    `start`/`end` are whole days (the panel's range); `since`/`until` are moments, both inclusive (a window around
    an anchor, a range to the minute); `session` keeps one session's episodes (a drill-down)."""
    qs = Memory.objects.filter(palace_id__in=palace_ids, kind=Memory.Kind.EPISODE, status__in=EPISODE_STATUSES)
    if start is not None:
        qs = qs.filter(occurred_at__gte=_day_start(start))
    if end is not None:
        qs = qs.filter(occurred_at__lt=_day_start(end + timedelta(days=1)))
    if since is not None:
        qs = qs.filter(occurred_at__gte=since)
    if until is not None:
        qs = qs.filter(occurred_at__lte=until)
    if session is not None:
        qs = qs.filter(source_session=session)
    heads = qs.values("palace_id", "source_session").annotate(
        last=Max("occurred_at"), first=Min("occurred_at"), n=Count("id")
    )
    if cursor:
        heads = heads.filter(last__lt=_after_episodes(cursor))
    picked = list(heads.order_by("-last", "palace_id", "source_session")[: groups + 1])
    more = len(picked) > groups
    picked = picked[:groups]
    if not picked:
        return [], ""
    which = Q()
    for head in picked:
        which |= Q(palace_id=head["palace_id"], source_session=head["source_session"])
    entries: dict[tuple[int, str], list[Memory]] = {}
    rows = _rows(qs.filter(which), slim=True).order_by("occurred_at", "source_seq", "id")
    for memory in rows[: groups * per_group * 2]:
        bucket = entries.setdefault((memory.palace_id, memory.source_session), [])
        if len(bucket) < per_group:
            bucket.append(memory)
    out = [
        EpisodeGroup(
            palace_id=h["palace_id"],
            session=h["source_session"],
            first=h["first"],
            last=h["last"],
            count=h["n"],
            entries=entries.get((h["palace_id"], h["source_session"]), []),
        )
        for h in picked
    ]
    return out, (_encode(picked[-1]["last"].isoformat()) if more else "")


def episodes_nearby(*, anchor: Memory, minutes: int, limit: int = 60) -> list[Memory]:
    """Episodes in the anchor's palace within ± `minutes` of its moment, in time order."""
    window = timedelta(minutes=minutes)
    qs = Memory.objects.filter(
        palace_id=anchor.palace_id,
        kind=Memory.Kind.EPISODE,
        status__in=EPISODE_STATUSES,
        occurred_at__gte=anchor.occurred_at - window,
        occurred_at__lte=anchor.occurred_at + window,
    )
    return list(_rows(qs, slim=True).order_by("occurred_at", "source_seq", "id")[:limit])


def room_memories(*, room: Room, limit: int = 30) -> list[Memory]:
    """What a room holds, slot by slot (forgotten memories left out), newest first within a slot."""
    qs = Memory.objects.filter(palace_id=room.palace_id, slot__room=room).exclude(status=Memory.Status.FORGOTTEN)
    return list(_rows(qs, slim=True).order_by("slot__number", "-id")[:limit])


@dataclass(frozen=True)
class PendingProposal:
    proposal: DistillProposal
    members: list[Memory]  # the cluster's memories, as clustered (oldest first); a deleted one is left out


def distill_proposals_pending(palace_ids: Sequence[int], *, limit: int = 50) -> list[PendingProposal]:
    """The pending distillation proposals of these palaces (resolved for the caller beforehand: pass only palaces
    the caller may read), newest first, with their members (two queries whatever the count)."""
    rows = list(
        DistillProposal.objects.filter(palace_id__in=list(palace_ids), status=DistillProposal.Status.PENDING)
        .select_related("palace")
        .order_by("-created_at", "-pk")[:limit]
    )
    wanted = {int(i) for row in rows for i in row.member_ids}
    found = Memory.objects.filter(pk__in=wanted).only("id", "palace_id", "kind", "placard", "content", "status")
    members = {m.pk: m for m in found}
    return [
        PendingProposal(proposal=row, members=[members[int(i)] for i in row.member_ids if int(i) in members])
        for row in rows
    ]


def distill_proposals(
    *, user: User, palace_ids: Sequence[int] | None = None, status: str | None = None
) -> list[DistillProposal]:
    """The distillation proposals of the palaces the user may read (or of those among `palace_ids`), newest first."""
    readable = [p.pk for p in palaces_readable(user=user)]
    if palace_ids is not None:
        readable = [pk for pk in readable if pk in set(palace_ids)]
    rows = DistillProposal.objects.filter(palace_id__in=readable).select_related("palace")
    if status is not None:
        rows = rows.filter(status=status)
    return list(rows.order_by("-created_at", "-pk")[:200])


def open_contradictions(*, memory_ids: Sequence[int]) -> dict[int, list[int]]:
    """The pending `contradicts` edges touching each of `memory_ids` (memories the caller may already read):
    memory id -> edge ids, oldest edge first. One query."""
    found: dict[int, list[int]] = {}
    if not memory_ids:
        return found
    ids = set(memory_ids)
    edges = (
        Edge.objects.filter(kind=Edge.Kind.CONTRADICTS, status=Edge.Status.PENDING)
        .filter(Q(from_memory_id__in=ids) | Q(to_memory_id__in=ids))
        .order_by("pk")
        .values_list("pk", "from_memory_id", "to_memory_id")
    )
    for pk, a, b in edges:
        for memory_id in {a, b} & ids:
            found.setdefault(memory_id, []).append(pk)
    return found
