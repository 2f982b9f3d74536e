"""What the model reads from the browse family (timeline, tour, neighbours, the closed wing, stats); recalled text is
wrapped."""

from __future__ import annotations

from api.mcp import schemas
from api.mcp.text.common import row_line, rows_text
from memory.text import wrap_memory_context


def _stop_line(seq: int, coordinate: str, memory: schemas.MemoryRow | None) -> str:
    return f"{seq}. " + (row_line(memory) if memory else f"[{coordinate}] (empty)")


def timeline_tour(out: schemas.TimelineOut, *, offset: int, limit: int) -> str:
    total = out.total or 0
    tail = f"More stops: call again with offset={offset + limit}." if offset + limit < total else ""
    lines = [_stop_line(r.seq or 0, r.coordinate or "", r.memory) for r in out.rows]
    title = f"Tour of {out.palace} in route order (stops {offset + 1}–{offset + len(out.rows)} of {total}):"
    return rows_text(title, lines, empty="No stops on the route yet.", tail=tail)


def timeline_created(out: schemas.TimelineOut) -> str:
    lines = [f"{r.memory.created_at:%Y-%m-%d %H:%M} " + row_line(r.memory) for r in out.rows if r.memory]
    tail = f"Older: call again with cursor={out.next_cursor}." if out.next_cursor else ""
    return rows_text(f"Timeline of {out.palace}, newest first:", lines, empty="No memories yet.", tail=tail)


def neighbours(out: schemas.NeighboursOut) -> str:
    lines = [
        f"- {n.hops} hop(s) via {n.via} ({'from' if n.direction == 'out' else 'to'} #{n.from_id}): "
        + row_line(n.memory)
        for n in out.neighbours
    ]
    return rows_text("From " + row_line(out.origin), lines, empty="No related memories within reach.")


def toured(out: schemas.TourOut) -> str:
    if out.mode == "thematic":
        degraded = f", degraded: {', '.join(out.degraded)}" if out.degraded else ""
        title = f'Thematic tour of {out.palace} around "{out.theme}" ({out.search_mode} search{degraded}):'
    else:
        title = f"Fixed tour of {out.palace} ({out.total} stops):"
    lines = [_stop_line(r.seq, r.coordinate, r.memory) for r in out.stops]
    return rows_text(title, lines, empty="No stops.", tail=out.note)


def closed_wing(out: schemas.ForgottenOut, epitaphs: dict[int, str]) -> str:
    lines = [row_line(r) + f" — epitaph: {epitaphs[r.id] or '(none given)'}" for r in out.memories]
    tail = f"Older: call again with cursor={out.next_cursor}." if out.next_cursor else ""
    return rows_text(
        f"The closed wing of {out.palace} (forgotten memories, newest first):",
        lines,
        empty="Nothing has been forgotten.",
        tail=tail,
    )


def stats(out: schemas.StatsOut) -> str:
    ratio = "unknown" if out.signal_ratio is None else f"{out.signal_ratio:.0%}"
    lines = [
        f"Palace {out.palace}: {out.total} memories " + ", ".join(f"{k} {v}" for k, v in out.by_status.items() if v),
        "Active by kind: " + ", ".join(f"{k} {v}" for k, v in out.by_kind.items()),
        f"Signal ratio: {ratio} ({out.signal_reason}). Reviews due: {out.reviews_due}. "
        f"Pending contradictions: {out.pending_contradictions}. Without vector: {out.without_vector}.",
        "Room directory (search inside one with memory_search room=…):",
    ]
    rooms = [
        f"- {r.name} ({r.kind}): {r.slots_used}/{r.capacity} slots, {r.active} active"
        + (f" · latest: {r.latest_placard}" if r.latest_placard else "")
        for r in out.rooms
    ] or ["- no rooms yet"]
    # Room names and placards are stored text a member wrote: recalled history, inside the wrapper.
    return "\n".join([*lines, wrap_memory_context("\n".join(rooms))])
