"""What the model reads from the save family (memory_save, memory_update, memory_forget, memory_distill)."""

from __future__ import annotations

from api.mcp import schemas
from api.mcp.text.common import flat
from memory.text import wrap_memory_context, wrap_memory_field


def entity_list(tags: list[schemas.EntityTagOut]) -> str:
    return ", ".join(f"{flat(t.name)} ({t.kind}, id {t.id})" for t in tags)


def entities_text(tags: list[schemas.EntityTagOut], *, by: str, fallback: str) -> str:
    """The entities a save linked, and who found them: "entities: Redis (tool, id 3) [rules; model timeout]"."""
    label = by + (f"; model {fallback}, rules used" if fallback else "")
    return f"entities: {entity_list(tags) or 'none'} [{label}]"


def saved(out: schemas.SaveOut) -> str:
    lines = [f"Saved into {out.palace}: {out.count - out.failed} of {out.count} item(s) handled."]
    for item in out.items:
        if item.disposition == "error":
            lines.append(f"[{item.index}] error — {item.error}")
            continue
        line = f"[{item.index}] {item.disposition}"
        if item.id is not None:
            line += f" id={item.id} at {item.coordinate or 'unslotted'}"
        if item.restored:
            line += f" (restored the forgotten #{item.forgotten}, no new memory)"
        elif item.merged_into is not None:
            line += f" (restatement: reinforced #{item.merged_into}, no new memory)"
        if item.contradicts:
            line += f"; may contradict {', '.join(f'#{c}' for c in item.contradicts)}"
        if item.edges:
            line += f" ({', '.join(f'edge={e}' for e in item.edges)})"
        if item.redactions:
            line += f"; redacted {', '.join(item.redactions)}"
        if item.degraded:
            line += f"; degraded: {', '.join(item.degraded)} (saved without a vector; keyword search still finds it)"
        if item.hint:  # it may quote another memory's placard: stored text, wrapped
            line += f" — {wrap_memory_field(item.hint)}"
        if item.entities or item.entities_fallback or item.entities_error:
            line += "; " + entities_text(item.entities, by=item.entities_by, fallback=item.entities_fallback)
            if item.entities_error:
                line += f" (entity linking failed: {item.entities_error})"
            if item.entities_note:
                line += f" ({item.entities_note})"
        lines.append(line)
    if any(i.forgotten and not i.restored for i in out.items):
        lines.append("Next: to bring a forgotten memory back, save it again with restore: true.")
    if any(i.edges for i in out.items):
        lines.append(
            "Next: memory_review the contradicted memory, then memory_resolve the edge (keep_newer | keep_older | "
            "both_stand | merge) or memory_update one of them."
        )
    return "\n".join(lines)


def updated(out: schemas.UpdateOut) -> str:
    new, old = out.memory, out.supersedes
    return (
        f"Corrected: id={new.id} (version {new.version}) supersedes #{old} at {new.coordinate or 'unslotted'}. "
        f"#{old} keeps its history and leaves default search."
    )


def forgot(out: schemas.ForgetOut) -> str:
    return f"Forgot #{out.id} (restorable; it keeps its slot in the closed wing). Epitaph: {out.epitaph or '—'}"


def restored(out: schemas.RestoreOut) -> str:
    row = out.memory
    where = f" [{row.coordinate}]" if row.coordinate else ""
    return (
        f"Restored #{row.id}{where} from {out.was} (epitaph: {out.epitaph or '—'}); it is active again, version "
        f"{row.version}."
    )


DELIVERY = {
    "inline": "the worker finished it within the wait",
    "queued": "queued for the worker",
    "lookup": "as asked",
}


def distilled(out: schemas.DistillOut) -> str:
    job = f"Distillation job #{out.job} ({out.mode}, {out.palace}) is {out.state} [{DELIVERY[out.delivery]}]."
    if out.state in ("queued", "running"):
        return (
            f"{job} Clustering runs on the worker, not in this call; nothing has changed yet.\n"
            f"Next: call memory_distill with job={out.job} in a moment for its result."
        )
    if out.state == "failed":
        failed = f"{job} It failed: {out.error or 'no reason recorded'}."
        if out.mode == "apply":  # each cluster is applied in its own transaction
            failed += " Clusters it applied before failing stay applied; the op log lists them (memory.distill)."
        return failed
    verb = "Proposed" if out.mode == "suggest" else "Applied"
    clusters = out.clusters
    head = f"{job}\n{verb} {len(clusters)} cluster(s) in {out.palace} (LLM configured: {out.llm_configured}):"
    lines: list[str] = []
    for c in clusters:
        line = f"- {c.kind} {', '.join(f'#{i}' for i in c.member_ids)} → {c.content!r} (by {c.producer}"
        line += f"; {c.fallback})" if c.fallback else ")"
        if c.rule_id is not None:
            line += f" = new rule id={c.rule_id}"
        if c.skipped:
            line += f" skipped: {c.skipped}"
        lines.append(line)
    # The rules quote stored text (the members', or a model's merge of them): recalled history, inside the wrapper.
    body = [head, wrap_memory_context("\n".join(lines))] if clusters else [head, "Nothing to merge."]
    if clusters and out.mode == "suggest":
        body.append("Call again with mode=apply to merge them (each rule supersedes its members).")
    return "\n".join(body)
