"""What the model reads from the facts family (memory_facts): facts with their validity, entities resolved or not."""

from __future__ import annotations

from datetime import datetime

from api.mcp import schemas
from api.mcp.text.common import flat, rows_text
from memory.text import wrap_memory_context


def _day(moment: datetime) -> str:
    return moment.date().isoformat()


def fact_line(fact: schemas.FactOut) -> str:
    since = _day(fact.valid_from) if fact.valid_from else "…"
    until = _day(fact.valid_to) if fact.valid_to else "now"
    line = f"- fact={fact.id} [{since} → {until}; recorded {_day(fact.recorded_at)}]"
    if fact.state != "current":
        line += f" ({fact.state.replace('_', ' ')}{f' by fact={fact.replaced_by}' if fact.replaced_by else ''})"
    if fact.predicate:
        line += f" {flat(fact.predicate)}:"
    line = f"{line} {flat(fact.content)}"
    if fact.also_current:
        others = ", ".join(f"fact={i}" for i in fact.also_current)
        line += f" [also current with the same predicate: {others}; replace one with replaces= if it is outdated]"
    return line


def _entity_line(entity: schemas.EntityRef) -> str:
    aliases = f" (aka {', '.join(flat(a) for a in entity.aliases)})" if entity.aliases else ""
    where = f" @{entity.palace}" if entity.palace != "my palace" else ""
    return f"- entity_id={entity.id} {flat(entity.name)} [{entity.kind}]{aliases}{where}"


def facts_written(out: schemas.FactsOut) -> str:
    lines = [f"Facts into {out.palace}: {len(out.written)} written, {len(out.failed)} failed."]
    for w in out.written:
        made = " (new entity)" if w.entity_created else ""
        ended = f", ends fact={w.replaces}" if w.replaces else ""
        if w.adopted:
            ended += " (the same fact written before without replaces; no copy made)"
        lines.append(f"[{w.index}] fact={w.id} about entity_id={w.entity_id}{made}{ended}")
        if w.alongside:
            others = ", ".join(f"fact={i}" for i in w.alongside)
            first = w.alongside[-1]
            lines.append(
                f"    also current with the same entity and predicate: {others} (both true now). If fact={w.id} "
                f"replaces fact={first}, send it again with replaces={first} (fact={w.id} becomes the successor; no "
                "copy is made); if both hold, nothing to do."
            )
    for f in out.failed:
        lines.append(f"[{f.index}] failed — {f.reason}")
        lines.extend(f"    {_entity_line(e)}" for e in f.candidates)
    # A confirmation is not recall, unless it lists stored entities (an ambiguous name's candidates).
    recalled = any(f.candidates for f in out.failed)
    return wrap_memory_context("\n".join(lines)) if recalled else "\n".join(lines)


def facts_queried(out: schemas.FactsOut) -> str:
    point = []
    if out.as_of is not None:
        point.append(f"true as of {out.as_of.isoformat()} (world time)")
    if out.known_at is not None:
        point.append(f"as Atrium knew them at {out.known_at.isoformat()} (record time)")
    when = " and ".join(point) or "true now"
    if out.entity is None:
        if out.candidates:
            lines = [
                "The name matches several entities; call again with entity_id:",
                *map(_entity_line, out.candidates),
            ]
        else:
            lines = ["No entity by that name (none was created)."]
            if out.suggestions:
                lines += ["Did you mean:", *map(_entity_line, out.suggestions)]
        return wrap_memory_context("\n".join(lines))
    title = f"Facts about {flat(out.entity.name)} (entity_id={out.entity.id}), {when}:"
    tail = f"{out.hidden} ended or replaced fact(s) not shown; include_invalid=true lists them." if out.hidden else ""
    return rows_text(title, map(fact_line, out.facts), empty="(no facts at that point)", tail=tail)
