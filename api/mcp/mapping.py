"""Domain results → the tools' output models (api/mcp/schemas.py). No ORM queries here: whatever a row needs was
loaded by the selector that produced it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from api.mcp import schemas
from api.schemas import distill_job_answer
from memory.search import qualify_ref
from memory.text import truncate_to_chars

if TYPE_CHECKING:
    from memory.context import StandingProfile
    from memory.knowledge import EntityTag, FactsQueryResult, FactsWriteResult, FactView
    from memory.models import DistillJob, Entity, Memory
    from memory.save import SaveResult
    from memory.search import Overview as SearchOverview
    from memory.search import SearchResult, Tour, Verdict
    from review.selectors import Overview

SNIPPET_CHARS = 400  # search and list rows; memory_examine returns the whole body


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


def entity_tags(tags: list[EntityTag]) -> list[schemas.EntityTagOut]:
    return [schemas.EntityTagOut(id=t.id, name=t.name, kind=t.kind, source=t.source) for t in tags]


def save_item(index: int, result: SaveResult) -> schemas.SaveItemOut:
    memory = result.memory
    linked = result.entities
    return schemas.SaveItemOut(
        index=index,
        disposition=result.disposition,  # type: ignore[arg-type]
        id=memory.pk if memory is not None else None,
        merged_into=result.merged_into,
        coordinate=coordinate_of(memory) if memory is not None else None,
        contradicts=list(result.contradicts),
        edges=list(result.edges),
        redactions=list(result.redactions),
        degraded=list(result.degraded),
        hint=result.hint,
        forgotten=result.forgotten,
        restored=result.restored,
        entities=entity_tags(linked.tags) if linked is not None else [],
        entities_by=linked.by if linked is not None else "",
        entities_fallback=linked.fallback if linked is not None else "",
        entities_error=linked.error if linked is not None else "",
        entities_note=linked.note() if linked is not None else "",
    )


def search_out(
    *,
    query: str,
    result: SearchResult,
    labels: dict[int, str],
    open_edges: dict[int, list[int]] | None = None,
    fallback_from: str = "request",
) -> schemas.SearchOut:
    hits = []
    open_edges = open_edges or {}
    for hit in result.hits:
        row = memory_row(hit.memory, labels)
        hits.append(
            schemas.SearchHit(
                id=row.id,
                ref=qualify_ref(result.batch, hit.ref) if result.batch else hit.ref,
                label=hit.label,
                score=hit.score,
                kind=row.kind,
                coordinate=row.coordinate,
                palace=row.palace,
                placard=row.placard,
                content=row.content,
                content_truncated=row.content_truncated,
                occurred_at=row.occurred_at,
                cues=list(hit.cues),
                open_edges=open_edges.get(row.id, []),
                facts=[fact_out(v) for v in hit.facts],
                entities=entity_tags(hit.entities),
            )
        )
    return schemas.SearchOut(
        query=query,
        mode=result.mode,  # type: ignore[arg-type]
        degraded=list(result.degraded),
        common_words=list(result.common_words),
        batch_id=result.batch,
        hits=hits,
        view=result.view,
        as_of=result.as_of,
        known_at=result.known_at,
        how=schemas.SearchHowOut(
            arms=result.arms,
            matched=result.matched,
            floor=result.floor,
            below_floor=result.below_floor,
            query_read=result.query_read,
            database=result.database,
            rewrite=result.rewrite,  # type: ignore[arg-type]
            queries=list(result.queries),
            rewrite_error=result.rewrite_error,
            fallback=result.fallback or "none",  # what memory.search ran with, not what was asked
            fallback_from=fallback_from,  # type: ignore[arg-type]
            fallback_used=result.overview is not None,
        ),
        overview=overview_out(result.overview, labels) if result.overview is not None else None,
    )


def overview_out(overview: SearchOverview, labels: dict[int, str]) -> schemas.OverviewOut:
    """The overview a miss fell back to: rows without refs, each labelled "overview" (memory.search.overview)."""
    return schemas.OverviewOut(
        label=overview.label,  # type: ignore[arg-type]
        rooms=[
            schemas.OverviewRoomsOut(
                palace=labels.get(palace, str(palace)),
                kind=k.kind,
                rooms=k.rooms,
                memories=k.memories,
                newest=[room.name for room in k.newest],
            )
            for palace, kinds in overview.rooms.items()
            for k in kinds
        ],
        entries=[
            schemas.OverviewEntryOut(label=e.label, why=e.why, memory=memory_row(e.memory, labels))  # type: ignore[arg-type]
            for e in overview.entries
        ],
    )


def fact_out(view: FactView) -> schemas.FactOut:
    fact = view.fact
    return schemas.FactOut(
        id=fact.pk,
        entity_id=fact.entity_id,
        entity=fact.entity.name,
        predicate=fact.predicate,
        content=fact.content,
        valid_from=fact.valid_from,
        valid_to=view.valid_to,
        recorded_at=fact.recorded_at,
        superseded_at=view.superseded_at,
        replaces=fact.replaces_id,
        replaced_by=view.replaced_by,
        state=view.state,  # type: ignore[arg-type]
        also_current=view.also_current,
    )


def assess_out(verdict: Verdict) -> schemas.AssessOut:
    return schemas.AssessOut(
        batch_id=verdict.batch,
        verdict=verdict.verdict,  # type: ignore[arg-type]
        next_strategy=verdict.next_strategy,
        claimed_adequate=verdict.claimed_adequate,
        claimed_strategy=verdict.claimed_strategy,
        valid_refs=verdict.valid_refs,
        memory_ids=verdict.memory_ids,
        rejected_refs=[schemas.RejectedRefOut(ref=r.ref, reason=r.reason) for r in verdict.rejected],
        missing=verdict.missing,
        reasons=verdict.reasons,
        reinforced=verdict.reinforced,
        reinforcement=verdict.reinforcement,
    )


def tour_out(*, tour: Tour, palace: str, labels: dict[int, str]) -> schemas.TourOut:
    return schemas.TourOut(
        mode=tour.mode,  # type: ignore[arg-type]
        palace=palace,
        theme=tour.theme,
        total=tour.total,
        stops=[
            schemas.TourStopOut(
                seq=s.seq,
                coordinate=s.coordinate,
                memory=memory_row(s.memory, labels) if s.memory is not None else None,
            )
            for s in tour.stops
        ],
        search_mode=tour.search_mode,
        degraded=list(tour.degraded),
        note=tour.note,
    )


def stats_out(*, palace: str, overview: Overview) -> schemas.StatsOut:
    stats = overview.stats
    return schemas.StatsOut(
        palace=palace,
        total=stats.total,
        by_status=stats.by_status,
        by_kind=stats.by_kind,
        without_vector=stats.without_vector,
        unslotted=stats.unslotted,
        review_enrolled=stats.review_enrolled,
        reviews_due=overview.reviews_due,
        pending_contradictions=stats.pending_contradictions,
        created_last_7_days=stats.created_last_7_days,
        signal_ratio=stats.signal_ratio,
        signal_reason=stats.signal_reason,
        rooms=[
            schemas.RoomOut(
                name=r.name,
                kind=r.kind,
                capacity=r.capacity,
                slots_used=r.slots_used,
                active=r.active,
                latest_placard=r.latest_placard,
            )
            for r in overview.rooms
        ],
    )


def distill_out(*, job: DistillJob, delivery: str) -> schemas.DistillOut:
    """A distillation job as memory_distill answers it: its state, and its result once the worker has done it."""
    return schemas.DistillOut(job=job.pk, palace=job.palace.label, **distill_job_answer(job, delivery=delivery))


def profile_out(profile: StandingProfile) -> schemas.ProfileOut:
    return schemas.ProfileOut(
        text=profile.text,
        tokens=profile.tokens,
        budget=profile.budget,
        curated=profile.curated,
        lines=[
            schemas.ProfileLineOut(
                id=line.memory_id,
                coordinate=line.coordinate,
                kind=line.kind,
                placard=line.placard,
                body=line.body,
                indexed=line.indexed,
                truncated=line.truncated,
            )
            for line in profile.lines
        ],
        more=profile.more,
        reviews_due=profile.reviews_due,
    )


def entity_ref(entity: Entity, labels: dict[int, str]) -> schemas.EntityRef:
    return schemas.EntityRef(
        id=entity.pk,
        name=entity.name,
        kind=entity.kind,
        palace=labels.get(entity.palace_id, str(entity.palace_id)),
        aliases=[str(a) for a in entity.aliases or []],
    )


def facts_written_out(result: FactsWriteResult, labels: dict[int, str]) -> schemas.FactsOut:
    return schemas.FactsOut(
        mode="write",
        palace=labels.get(result.palace.pk, str(result.palace.pk)),
        written=[
            schemas.FactWrittenOut(
                index=w.index,
                id=w.fact.pk,
                entity_id=w.fact.entity_id,
                entity=w.fact.entity.name,
                entity_created=w.entity_created,
                replaces=w.fact.replaces_id,
                alongside=w.alongside,
                adopted=w.adopted,
            )
            for w in result.written
        ],
        failed=[
            schemas.FactFailedOut(
                index=f.index, reason=f.reason, candidates=[entity_ref(e, labels) for e in f.candidates]
            )
            for f in result.failed
        ],
    )


def facts_queried_out(result: FactsQueryResult, labels: dict[int, str], *, include_invalid: bool) -> schemas.FactsOut:
    return schemas.FactsOut(
        mode="query",
        entity=entity_ref(result.entity, labels) if result.entity is not None else None,
        facts=[fact_out(v) for v in result.facts],
        candidates=[entity_ref(e, labels) for e in result.candidates],
        suggestions=[entity_ref(e, labels) for e in result.suggestions],
        as_of=result.as_of,
        known_at=result.known_at,
        include_invalid=include_invalid,
        hidden=result.hidden,
    )
