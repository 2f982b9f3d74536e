"""What the model reads: each tool's text rendering, and the model → output-schema conversions behind them.

Plain lines, one memory per line, `id=` first so the model can copy it into the next call. Everything recalled
(search, timeline, review, examine, neighbours, tours, the closed wing, the profile) is wrapped in
`<atrium_memory_context>`; confirmations of writes are not recall and stay unwrapped.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from api.mcp import schemas
from memory.models import Memory
from memory.textproc import truncate_to_chars
from memory.wrapping import wrap_memory_context
from palace.models import Palace

if TYPE_CHECKING:
    from memory.pipeline import SaveResult

SNIPPET_CHARS = 400  # search and list rows; memory_examine returns the whole body


def palace_label(palace: Palace) -> str:
    return palace.label


def palace_labels(palace_ids: Iterable[int]) -> dict[int, str]:
    return {p.pk: p.label for p in Palace.objects.filter(pk__in=set(palace_ids))}


def coordinate_of(memory: Memory) -> str | None:
    return memory.slot.coordinate if memory.slot_id is not None and memory.slot is not None else None


def memory_row(memory: Memory, labels: dict[int, str], *, max_chars: int | None = SNIPPET_CHARS) -> schemas.MemoryRow:
    content = memory.content
    cut = truncate_to_chars(content, max_chars) if max_chars is not None else content
    return schemas.MemoryRow(
        id=memory.pk,
        kind=memory.kind,
        status=memory.status,
        coordinate=coordinate_of(memory),
        palace=labels.get(memory.palace_id, str(memory.palace_id)),
        placard=memory.placard,
        content=cut,
        content_truncated=cut != content,
        confidence=memory.confidence,
        version=memory.version,
        occurred_at=memory.occurred_at,
        created_at=memory.created_at,
    )


def _flat(text: str) -> str:
    return " ".join(text.split())


def row_line(row: schemas.MemoryRow, *, prefix: str = "") -> str:
    parts = [f"{prefix}id={row.id}", f"[{row.coordinate or 'unslotted'}]", row.kind]
    if row.status != "active":
        parts.append(f"({row.status})")
    if row.palace != "my palace":
        parts.append(f"@{row.palace}")
    head = " ".join(parts)
    if row.placard:
        head += f" · {_flat(row.placard)}"
    return f"{head} — {_flat(row.content)}"


# --- per tool ------------------------------------------------------------------------------------------------------


def save_item(index: int, result: SaveResult) -> schemas.SaveItemOut:
    memory = result.memory
    return schemas.SaveItemOut(
        index=index,
        disposition=result.disposition,  # type: ignore[arg-type]
        id=memory.pk if memory is not None else None,
        merged_into=result.merged_into,
        coordinate=coordinate_of(memory) if memory is not None else None,
        contradicts=list(result.contradicts),
        redactions=list(result.redactions),
        degraded=list(result.degraded),
        hint=result.hint,
    )


def save_text(out: schemas.SaveOut) -> str:
    lines = [f"Saved into {out.palace}: {out.count - out.failed} of {out.count} item(s) handled."]
    for item in out.items:
        if item.disposition == "error":
            lines.append(f"[{item.index}] error — {item.error}")
            continue
        line = f"[{item.index}] {item.disposition}"
        if item.id is not None:
            line += f" id={item.id} at {item.coordinate or 'unslotted'}"
        if item.merged_into is not None:
            line += f" (restatement: reinforced #{item.merged_into}, no new memory)"
        if item.contradicts:
            line += f"; may contradict {', '.join(f'#{c}' for c in item.contradicts)}"
        if item.redactions:
            line += f"; redacted {', '.join(item.redactions)}"
        if item.degraded:
            line += f"; degraded: {', '.join(item.degraded)} (saved without a vector; keyword search still finds it)"
        if item.hint:
            line += f" — {item.hint}"
        lines.append(line)
    if any(i.contradicts for i in out.items):
        lines.append("Next: memory_review the contradicted memory, then memory_update or memory_forget one of them.")
    return "\n".join(lines)


def search_text(out: schemas.SearchOut) -> str:
    head = f'Search "{_flat(out.query)}" — mode: {out.mode}'
    if out.degraded:
        head += f" (degraded: {', '.join(out.degraded)} arm unavailable; results come from the remaining arm)"
    if out.common_words:
        head += f" (too common to match on their own: {', '.join(out.common_words)})"
    if not out.hits:
        return wrap_memory_context(f"{head}\nNo memory matched. Nothing here is evidence; search differently or ask.")
    lines = [head]
    for hit in out.hits:
        line = f"- id={hit.id} ref={hit.ref} [{hit.label}] [{hit.coordinate or 'unslotted'}] {hit.kind}"
        if hit.palace != "my palace":
            line += f" @{hit.palace}"
        if hit.placard:
            line += f" · {_flat(hit.placard)}"
        line += f" — {_flat(hit.content)}"
        if hit.cues:
            line += f" (nearby: {', '.join(hit.cues)})"
        lines.append(line)
    lines.append(
        f"batch={out.batch_id} — before answering, call memory_assess with this batchId and the refs that answer "
        "the question; memory_examine ids for full text."
    )
    return wrap_memory_context("\n".join(lines))


def assess_text(out: schemas.AssessOut) -> str:
    lines = [f"Verdict for {out.batch_id}: {out.verdict}. Next strategy: {out.next_strategy}."]
    if out.valid_refs:
        lines.append(f"Valid evidence: {', '.join(out.valid_refs)} (memories {', '.join(map(str, out.memory_ids))}).")
    for rejected in out.rejected_refs:
        lines.append(f"Rejected ref {rejected.ref}: {rejected.reason}.")
    for reason in out.reasons:
        lines.append(f"Insufficient because {reason}.")
    if out.missing:
        lines.append(f"Missing: {'; '.join(out.missing)}.")
    if out.verdict == "insufficient":
        lines.append("Search again (another query, a room, or a project) before answering.")
    return "\n".join(lines)


def rows_text(title: str, rows: Iterable[str], *, empty: str, tail: str = "") -> str:
    lines = list(rows)
    body = [title, *(lines or [empty])]
    if tail:
        body.append(tail)
    return wrap_memory_context("\n".join(body))
