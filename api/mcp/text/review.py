"""What the model reads from the review family (memory_report, memory_review_queue, memory_audit)."""

from __future__ import annotations

from api.mcp import schemas
from api.mcp.text.common import row_line, rows_text
from memory.text import wrap_memory_context


def reported(out: schemas.ReportOut) -> str:
    if out.recorded == "outcome":
        return f"Recorded {out.outcome} for #{out.id}: confidence now {out.confidence:.2f}."
    assert out.next_due_at is not None
    return f"Graded #{out.id} {out.grade}/5: next review {out.next_due_at:%Y-%m-%d} (in {out.interval_days} day(s))."


def queue(out: schemas.QueueOut) -> str:
    lines = [
        f"- id={r.id} [{r.coordinate or 'unslotted'}] {r.kind} · {r.placard or '(no placard)'} — "
        f"{r.days_overdue} day(s) overdue"
        for r in out.items
    ]
    return rows_text(
        f"Reviews due: {out.due}. Recall each from its cue first (bodies are hidden on purpose):",
        lines,
        empty="Nothing is due.",
        tail=(
            "Then memory_examine the id to check yourself, and memory_report it with a grade 0–5." if out.items else ""
        ),
    )


def audit(out: schemas.AuditOut) -> str:
    lines = [row_line(out.memory), f"Sources ({len(out.sources)}):"]
    lines += [
        "  - " + ", ".join(f"{k}={v}" for k, v in source.items() if v not in (None, "")) for source in out.sources
    ]
    chain = " → ".join(f"#{m.id} ({m.status})" for m in out.supersede_chain)
    lines.append(f"Supersede chain (newest first): {chain}")
    lines.append(f"Contradictions ({len(out.contradictions)}):")
    for c in out.contradictions:
        line = f"  - edge={c.id} #{c.other_id} ({c.other_status}) {c.status}"
        line += f" ({c.resolution}: {c.resolution_reason})" if c.resolution else ""
        line += f" · {c.other_placard}" + (f" — {c.judged}" if c.judged else "")
        lines.append(line)
    if any(c.status == "pending" for c in out.contradictions):
        lines.append("Decide a pending edge with memory_resolve (keep_newer | keep_older | both_stand | merge).")
    lines.append(f"Op log ({len(out.oplog)}):")
    lines += [f"  - {o.at:%Y-%m-%d %H:%M} {o.op} by {o.actor} on #{o.target_id} {o.reason}".rstrip() for o in out.oplog]
    return wrap_memory_context("\n".join(lines))
