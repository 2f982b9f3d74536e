"""Decay: archive memories that are long unused and either low in importance or low in confidence.

Rules (README, "Forgetting and bringing back"):

1. a candidate is active, not under review (review_enrolled false and no active review card: recall decides the
   fate of what is practised), untouched — last access, or creation when never accessed — for more than
   ATRIUM_DECAY_AFTER_DAYS, and has importance below ATRIUM_DECAY_IMPORTANCE_BELOW or confidence below
   ATRIUM_DECAY_CONFIDENCE_BELOW, and is on neither side of an open (pending) contradiction: a question someone
   still has to decide keeps both of its memories in view;
2. each is archived with an epitaph that says which of those held (the op row `memory.decay` carries it too) and
   is restorable with memory_restore;
3. a dry run lists the same candidates with the same reasons and changes nothing.

Rows are claimed with a conditional UPDATE that re-checks the condition, so a second run, or two workers at once,
change nothing the first changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from memory.models import Edge, Memory
from palace.actors import Actor
from palace.models import Palace
from palace.oplog import oplog_write

DECAY_JOB = "decay"


@dataclass
class DecayResult:
    dry_run: bool
    cutoff: datetime
    importance_below: float
    confidence_below: float = 0.0
    candidates: list[int] = field(default_factory=list)
    archived: list[int] = field(default_factory=list)
    why: dict[int, str] = field(default_factory=dict)  # candidate id -> the epitaph it gets (or would get)


def _decay_condition(*, cutoff: datetime) -> Q:
    """Rule 1 of the module docstring; evaluated again in the claiming UPDATE."""
    weak = Q(importance__lt=settings.ATRIUM_DECAY_IMPORTANCE_BELOW) | Q(
        confidence__lt=settings.ATRIUM_DECAY_CONFIDENCE_BELOW
    )
    # The review card is reached through its reverse relation (review sits above memory; no import).
    not_reviewed = Q(review_enrolled=False) & (Q(review_card__isnull=True) | Q(review_card__active=False))
    # Archiving one side of an open contradiction would take it out of search and the Judge page while the edge
    # still asks someone to decide it.
    open_edges = Edge.objects.filter(kind=Edge.Kind.CONTRADICTS, status=Edge.Status.PENDING)
    undecided = Exists(open_edges.filter(from_memory=OuterRef("pk"))) | Exists(
        open_edges.filter(to_memory=OuterRef("pk"))
    )
    return Q(status=Memory.Status.ACTIVE, last_touch__lt=cutoff) & not_reviewed & weak & ~undecided


def _decayable(*, cutoff: datetime) -> QuerySet[Memory]:
    return Memory.objects.annotate(last_touch=Coalesce("last_accessed_at", "created_at")).filter(
        _decay_condition(cutoff=cutoff)
    )


def _epitaph(
    *, now: datetime, importance: float, confidence: float, created_at: datetime, accessed: datetime | None
) -> tuple[str, int]:
    days = settings.ATRIUM_DECAY_AFTER_DAYS
    last_touch = accessed or created_at
    idle = (now - last_touch).days
    what = "last accessed" if accessed is not None else "never accessed; created"
    weak = []
    if importance < settings.ATRIUM_DECAY_IMPORTANCE_BELOW:
        weak.append(f"importance {importance:.2f} below {settings.ATRIUM_DECAY_IMPORTANCE_BELOW:.2f}")
    if confidence < settings.ATRIUM_DECAY_CONFIDENCE_BELOW:
        weak.append(f"confidence {confidence:.2f} below {settings.ATRIUM_DECAY_CONFIDENCE_BELOW:.2f}")
    return f"decayed: {what} {last_touch:%Y-%m-%d} ({idle} days ago, after {days}) and {' and '.join(weak)}", idle


def decay_run(
    *, now: datetime | None = None, dry_run: bool = False, palace: Palace | None = None, actor: Actor | None = None
) -> DecayResult:
    """Archive long-unused, weak memories (restorable with memory_restore), one op row each."""
    now = now or timezone.now()
    actor = actor or Actor.for_system(DECAY_JOB)
    cutoff = now - timedelta(days=settings.ATRIUM_DECAY_AFTER_DAYS)
    result = DecayResult(
        dry_run=dry_run,
        cutoff=cutoff,
        importance_below=settings.ATRIUM_DECAY_IMPORTANCE_BELOW,
        confidence_below=settings.ATRIUM_DECAY_CONFIDENCE_BELOW,
    )
    qs = _decayable(cutoff=cutoff)
    if palace is not None:
        qs = qs.filter(palace=palace)
    rows = list(
        qs.order_by("pk").values_list("pk", "palace_id", "importance", "confidence", "created_at", "last_accessed_at")
    )
    for pk, _, importance, confidence, created_at, accessed in rows:
        result.candidates.append(pk)
        result.why[pk] = _epitaph(
            now=now, importance=importance, confidence=confidence, created_at=created_at, accessed=accessed
        )[0]
    if dry_run:
        return result
    palaces = {p.pk: p for p in Palace.objects.filter(pk__in={r[1] for r in rows})}
    for pk, palace_id, importance, confidence, created_at, accessed in rows:
        epitaph, idle = _epitaph(
            now=now, importance=importance, confidence=confidence, created_at=created_at, accessed=accessed
        )
        with transaction.atomic():
            claimed = (
                _decayable(cutoff=cutoff)
                .filter(pk=pk)
                .update(status=Memory.Status.ARCHIVED, epitaph=epitaph, version=F("version") + 1, updated_at=now)
            )
            if not claimed:
                continue  # accessed, enrolled, contradicted or changed since it was selected
            oplog_write(
                op="memory.decay",
                actor=actor,
                palace=palaces[palace_id],
                target_kind="memory",
                target_id=pk,
                reason=epitaph,
                detail={
                    "from_status": "active",
                    "idle_days": idle,
                    "after_days": settings.ATRIUM_DECAY_AFTER_DAYS,
                    "importance": importance,
                    "importance_below": settings.ATRIUM_DECAY_IMPORTANCE_BELOW,
                    "confidence": confidence,
                    "confidence_below": settings.ATRIUM_DECAY_CONFIDENCE_BELOW,
                },
            )
        result.archived.append(pk)
    return result
