"""What the model reads from memory_ingest_history."""

from __future__ import annotations

from typing import Any

from api.mcp import schemas


def _skips(reasons: dict[str, Any]) -> str:
    return ", ".join(f"{n} {why}" for why, n in reasons.items()) or "none"


def ingested(out: schemas.IngestOut) -> str:
    lines: list[str] = []
    if out.estimate is not None:
        e = out.estimate
        lines.append(
            f"Estimate (dry run, nothing stored): {e['sessions_kept']} of {e['sessions']} sessions, {e['turns']} "
            f"turns would run ({e['turns_left_out']} left out); skipped sessions: {_skips(e['skip_reasons'])}."
        )
        for s in e["per_session"]:
            where = f"skipped: {s['skip_reason']}" if s["skip_reason"] else f"-> {s['palace']['name']} ({s['why']})"
            lines.append(f"- {s['session']} [{s['client']}] {s['turns']} turns {where}")
        if out.per_session_shown < e["sessions"]:
            lines.append(f"(first {out.per_session_shown} sessions listed)")
        for rejected in e["files_rejected"]:
            lines.append(f"not read: {rejected['file']}: {rejected['reason']}")
    if out.run is not None:
        r = out.run
        by = r["extraction"]["turns_by_method"]
        lines.append(
            f"Backfill run id={r['id']}: {r['state']}{' (pause asked)' if r['pause_requested'] else ''}, "
            f"{r['turns_done']}/{r['turns_total']} turns ({round(100 * r['progress'])}%), {r['memories']} memories; "
            f"extracted by {_skips(by) if by else 'nothing yet'}; turns skipped: {_skips(r['turns_skipped'])}; "
            f"sessions skipped: {_skips(r['sessions_skipped'])}."
        )
        if r["error"]:
            lines.append(f"error: {r['error']}")
    lines.append(
        f"[{out.method}; paths allowed by {out.paths_allowed_by}; git {'read' if out.git_read else 'not read'}]"
    )
    if out.note:
        lines.append(out.note)
    return "\n".join(lines)
