"""Reads of the judge's records: the ruling behind an edge ("why was this deferred?") and the recent rulings."""

from __future__ import annotations

from collections.abc import Sequence

from memory.models import Adjudication, Edge


def adjudication_why(a: Adjudication) -> str:
    """One line: who ruled (the model, with its probabilities, or the rules and why) and the reason."""
    if a.model_took_part:
        return (
            f"judged by model {a.model_name} (same {a.p_same or 0:.2f}, contradicts {a.p_contradiction or 0:.2f}, "
            f"{a.elapsed_ms} ms): {a.reason}"
        )
    return f"judged by the rules ({a.fallback_reason}): {a.reason}"


def adjudications_for_edges(*, edge_ids: Sequence[int]) -> dict[int, Adjudication]:
    """The ruling that created each edge (edges the caller may already read). One query."""
    if not edge_ids:
        return {}
    rows = Adjudication.objects.filter(edge_id__in=list(edge_ids)).order_by("id")
    return {a.edge_id: a for a in rows if a.edge_id is not None}


def adjudications_recent(
    *,
    palace_ids: Sequence[int],
    verdict: str | None = None,
    model_took_part: bool | None = None,
    fallback_reason: str | None = None,
    limit: int = 50,
) -> list[Adjudication]:
    """The newest rulings in these palaces (already resolved for reading), with optional filters."""
    rows = Adjudication.objects.filter(palace_id__in=list(palace_ids))
    if verdict:
        rows = rows.filter(verdict=verdict)
    if model_took_part is not None:
        rows = rows.filter(model_took_part=model_took_part)
    if fallback_reason:
        rows = rows.filter(fallback_reason=fallback_reason)
    return list(rows.select_related("new_memory", "neighbour").order_by("-id")[:limit])


def contradictions_open(*, palace_ids: Sequence[int], limit: int = 50) -> list[Edge]:
    """The pending contradictions of these palaces (already resolved for reading), newest first, with both
    memories (their slots and authors) loaded, and each edge's ruling as `.ruling` (None when none was kept)."""
    edges = list(
        Edge.objects.filter(palace_id__in=list(palace_ids), kind=Edge.Kind.CONTRADICTS, status=Edge.Status.PENDING)
        .select_related(
            "palace",
            "from_memory__slot__room",
            "to_memory__slot__room",
            "from_memory__created_by",
            "to_memory__created_by",
        )
        .order_by("-id")[:limit]
    )
    rulings = adjudications_for_edges(edge_ids=[e.pk for e in edges])
    for edge in edges:
        setattr(edge, "ruling", rulings.get(edge.pk))  # noqa: B010
    return edges
