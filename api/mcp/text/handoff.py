"""What the model reads from the handoff family (the curated-profile and handoff tools). Recalled text (a
profile's content, a handoff, the bootstrap block, histories) is wrapped in `<atrium_memory_context>`; write
confirmations name the new version and stay unwrapped."""

from __future__ import annotations

from api.mcp import schemas
from api.mcp.text.common import flat, row_line, rows_text
from memory.text import wrap_memory_context


def _version_line(v: schemas.ProfileVersionOut) -> str:
    back = f" (rollback of v{v.rolled_back_from})" if v.rolled_back_from is not None else ""
    return f"- v{v.version}{back} by {v.created_by or '?'} at {v.created_at:%Y-%m-%d %H:%M} — {flat(v.content)[:120]}"


def profile_edit(out: schemas.ProfileEditOut) -> str:
    if out.action == "edit":
        return (
            f"Saved the curated profile of {out.palace} as version {out.version}; earlier versions are kept "
            f"(rollback with version=…). Pass expected_version={out.version} next time."
        )
    if out.action == "rollback":
        source = out.history[0].rolled_back_from if out.history else None
        return (
            f"Rolled the curated profile of {out.palace} back: version {out.version} copies version {source}; "
            f"nothing was deleted. Pass expected_version={out.version} next time."
        )
    head = f"Curated profile of {out.palace}: version {out.version}" + ("" if out.can_edit else " (read-only for you)")
    body = out.content if out.version else "(none yet: edit with expected_version=0)"
    lines = [head, body, "Versions (newest first):", *[_version_line(v) for v in out.history]]
    return wrap_memory_context("\n".join(lines))


def handoff_body(h: schemas.HandoffOut) -> list[str]:
    if not h.version:
        return [f"No handoff saved yet in {h.palace} (save with expected_version=0)."]
    back = f", a checkout of v{h.restored_from}" if h.restored_from is not None else ""
    lines = [f"Handoff v{h.version}{back} in {h.palace}:"]
    if h.doing:
        lines.append(f"Doing: {h.doing}")
    for title, items in (("Next steps", h.next_steps), ("Open questions", h.open_questions), ("Files", h.files)):
        if items:
            lines += [f"{title}:", *[f"- {item}" for item in items]]
    return lines


def handoff_saved(h: schemas.HandoffOut) -> str:
    back = f" (a checkout of v{h.restored_from}: revert forward, no version lost)" if h.restored_from else ""
    return (
        f"Saved your handoff in {h.palace} as version {h.version}{back}; the previous snapshot is kept. "
        f"Pass expected_version={h.version} on the next save."
    )


def history(out: schemas.HistoryOut) -> str:
    if out.target == "memory":
        return rows_text("Supersede chain (newest first):", (row_line(m) for m in out.memories), empty="(no versions)")
    if out.target == "profile":
        return rows_text(
            f"Curated profile versions of {out.palace} (newest first):",
            (_version_line(v) for v in out.profile),
            empty="(no versions yet)",
        )
    lines = [f"Your handoff versions in {out.palace} (newest first):"]
    for h in out.handoffs:
        lines += handoff_body(h)
    if not out.handoffs:
        lines.append("(none yet)")
    lines.append("Bring one back with memory_checkout target=handoff id=<version> (revert forward).")
    return wrap_memory_context("\n".join(lines))
