"""What the model reads from the recall family (memory_search, memory_assess, memory_examine); recalled text is
wrapped."""

from __future__ import annotations

from api.mcp import schemas
from api.mcp.text.common import flat, row_line, rows_text
from api.mcp.text.save import entity_list
from memory.text import wrap_memory_context


def how_line(how: schemas.SearchHowOut) -> str:
    """One line saying how the search was made: the arms that ran, the floor, query rewriting, the fallback."""
    arms = " + ".join(how.arms) if how.arms else "none (no palace to search)"
    floor = f"{how.floor:.3f} ({how.below_floor} below it)" if how.floor is not None else "none (no vector arm)"
    rewrite: str = how.rewrite
    if how.rewrite == "rewritten":
        rewrite += " into " + "; ".join(f'"{flat(q)}"' for q in how.queries[1:]) + " beside the query as given"
    elif how.rewrite in ("failed", "timeout"):
        rewrite += f" ({flat(how.rewrite_error)}): ran the query as given" if how.rewrite_error else ": ran as given"
    source = "your argument" if how.fallback_from == "request" else "your setting"
    fallback = f"{how.fallback} ({source}{', used' if how.fallback_used else ''})"
    read = "" if how.query_read == "as given" else f" · query read as a {how.query_read}"
    if how.database != "primary":
        read += f" · read from {how.database} (a read replica: rows may lag by seconds)"
    return f"How: arms {arms} · floor {floor} · rewrite {rewrite} · fallback {fallback}{read}"


def overview_lines(overview: schemas.OverviewOut) -> list[str]:
    """The overview a miss fell back to, said to be one: no ref on any row, so nothing here can be cited."""
    lines = ["Overview (not an answer and not evidence: what the palaces hold; cite none of it):"]
    for rooms in overview.rooms:
        newest = f" (newest: {', '.join(flat(n) for n in rooms.newest)})" if rooms.newest else ""
        lines.append(f"  rooms @{rooms.palace} {rooms.kind}: {rooms.rooms} room(s), {rooms.memories} memories{newest}")
    for entry in overview.entries:
        row = entry.memory
        line = f"- id={row.id} [{entry.label} · {entry.why}] [{row.coordinate or 'unslotted'}] {row.kind}"
        if row.palace != "my palace":
            line += f" @{row.palace}"
        if row.placard:
            line += f" · {flat(row.placard)}"
        lines.append(f"{line} — {flat(row.content)}")
    return lines


def searched(out: schemas.SearchOut) -> str:
    head = f'Search "{flat(out.query)}" — mode: {out.mode}'
    if out.view != "current":
        head += f" — as-of view: memories and facts {out.view}, not today's versions"
    if out.degraded:
        head += f" (degraded: {', '.join(out.degraded)} arm unavailable; results come from the remaining arm)"
    if out.common_words:
        head += f" (too common to match on their own: {', '.join(out.common_words)})"
    if not out.hits:
        lines = [head, how_line(out.how), "No memory matched. Nothing here is evidence; search differently or ask."]
        if out.overview is not None:
            lines += overview_lines(out.overview)
        return wrap_memory_context("\n".join(lines))
    lines = [head, how_line(out.how)]
    for hit in out.hits:
        line = f"- id={hit.id} ref={hit.ref} [{hit.label}] [{hit.coordinate or 'unslotted'}] {hit.kind}"
        if hit.palace != "my palace":
            line += f" @{hit.palace}"
        if hit.placard:
            line += f" · {flat(hit.placard)}"
        line += f" — {flat(hit.content)}"
        if hit.cues:
            line += f" (nearby: {', '.join(hit.cues)})"
        if hit.open_edges:
            line += f" [open contradiction: {', '.join(f'edge={e}' for e in hit.open_edges)}]"
        if hit.facts:
            line += " [facts: " + "; ".join(f"{flat(f.entity)}: {flat(f.content)}" for f in hit.facts) + "]"
        if hit.entities:
            line += f" [entities: {entity_list(hit.entities)}]"
        lines.append(line)
    lines.append(
        f"batch={out.batch_id} — before answering, call memory_assess with this batch_id and the refs that answer "
        "the question; memory_examine ids for full text."
    )
    return wrap_memory_context("\n".join(lines))


def assessed(out: schemas.AssessOut) -> str:
    lines = [f"Verdict for {out.batch_id}: {out.verdict}. Next strategy: {out.next_strategy}."]
    if out.valid_refs:
        lines.append(f"Valid evidence: {', '.join(out.valid_refs)} (memories {', '.join(map(str, out.memory_ids))}).")
    for rejected in out.rejected_refs:
        lines.append(f"Rejected ref {rejected.ref}: {rejected.reason}.")
    for reason in out.reasons:
        lines.append(f"Insufficient because {reason}.")
    if out.missing:
        lines.append(f"Missing: {'; '.join(out.missing)}.")
    lines.append(f"Confidence: {out.reinforcement}.")
    if out.verdict == "insufficient":
        lines.append("Search again (another query, a room, or a project) before answering.")
    return "\n".join(lines)


def examined(out: schemas.ExamineOut) -> str:
    lines = [row_line(r) + f" (v{r.version}, confidence {r.confidence:.2f})" for r in out.memories]
    missing = out.not_found
    tail = f"Not found (or not yours to read): {', '.join(f'#{i}' for i in missing)}" if missing else ""
    return rows_text(f"{len(out.memories)} memory(ies):", lines, empty="None found.", tail=tail)
