"""What the model reads from memory_episode_timeline: each session as a header line (its summary and how it was
made), then its episodes in time order. Recalled text, so all of it is wrapped."""

from __future__ import annotations

from api.mcp import schemas
from api.mcp.text.common import flat, row_line, rows_text

_HOW = {
    "llm": "summary by the model",
    "rules": "summary by the rules",
    "first_episode": "no session summary: its first episode shown",
    "none": "episodes saved without a session",
}


def _title(out: schemas.EpisodeTimelineOut) -> str:
    where = ", ".join(out.palaces) or "no palace"
    if out.mode == "around" and out.around is not None:
        return f"Episodes within ± {out.window_minutes} min of id={out.around.id} ({where}), newest session first:"
    span = ""
    if out.start or out.end:
        start = f"{out.start:%Y-%m-%d %H:%M}" if out.start else "the beginning"
        end = f"{out.end:%Y-%m-%d %H:%M}" if out.end else "now"
        span = f" from {start} to {end}"
    if out.mode == "session":
        return f"Episodes of session {flat(out.session or '')}{span} ({where}):"
    return f"Episodes by session{span} ({where}), newest session first:"


def _group_lines(g: schemas.EpisodeSessionOut) -> list[str]:
    name = flat(g.session) if g.session else "(no session)"
    head = f"== session {name} · {g.palace} · {g.first:%Y-%m-%d %H:%M}–{g.last:%H:%M} · {g.count} episode(s)"
    how = _HOW[g.summary_method] + (f" ({g.summary_source})" if g.summary_source in ("capture", "backfill") else "")
    if g.summary_fallback:
        how += f", rules because: {flat(g.summary_fallback)}"
    lines = [head, f"   {flat(g.summary) or '—'}  [{how}]"] if g.summary_method != "none" else [head]
    lines += [f"   {e.occurred_at:%H:%M} " + row_line(e) for e in g.episodes]
    if g.count > len(g.episodes) and g.session:
        lines.append(f"   … {g.count - len(g.episodes)} more: call again with session={flat(g.session)}")
    return lines


def episode_timeline(out: schemas.EpisodeTimelineOut) -> str:
    lines = [line for g in out.groups for line in _group_lines(g)]
    tail = f"Older sessions: call again with cursor={out.next_cursor}." if out.next_cursor else ""
    return rows_text(_title(out), lines, empty="No episodes here.", tail=tail)
