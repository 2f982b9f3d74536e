"""The palace of issue 17: sixteen unrelated team notes, a question none of them answers (MISS) and one that one of
them does (HIT). Stored with real e5 embeddings (one batch) and slotted as the pipeline slots them, so every door's
test of "nothing matched" and of the overview fallback runs against the same, real miss.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import transaction

from memory.models import Memory
from memory.providers import embed_passages
from memory.text import build_embedding_text, build_search_text
from palace.actors import Actor
from palace.models import Palace
from palace.slots import slot_assign

NOTES = [
    ("The design system uses Inter as its body font", "decision"),
    ("We decided to use Celery with Redis for background jobs", "decision"),
    ("Alice prefers green tea in the morning", "preference"),
    ("Deploys happen on Fridays with blue-green releases", "decision"),
    ("The office moved to Lisbon in January", "fact"),
    ("Bob's cat is called Miso", "fact"),
    ("Our API rate limit is 100 requests per minute", "fact"),
    ("Use ruff for linting and formatting", "skill"),
    ("The quarterly review is on March 3rd", "fact"),
    ("Carol is the on-call engineer this week", "fact"),
    ("Backups run nightly at 2am", "fact"),
    ("The mobile app targets iOS 17", "fact"),
    ("We pay invoices within 30 days", "fact"),
    ("The team lunch is every Thursday", "fact"),
    ("Passwords rotate every 90 days", "decision"),
    ("The logo is dark blue", "fact"),
]
MISS = "staging database"  # none of the notes is about it (memory.search's honesty tests show it misses)
HIT = "which font does the design system use"
HIT_ANSWER = NOTES[0][0]
WHEN = datetime(2026, 11, 1, tzinfo=UTC)


def save_team_notes(palace: Palace, notes: list[tuple[str, str]] | None = None) -> list[Memory]:
    """The notes in `palace`, oldest first, as the write pipeline stores them (search text, vector, slot)."""
    chosen = NOTES if notes is None else notes
    fields = [{"content": c, "placard": "", "speaker": "", "occurred_at": WHEN, "context": ""} for c, _ in chosen]
    vectors = embed_passages([build_embedding_text(**f) for f in fields])
    system = Actor.for_system("tests")
    with transaction.atomic():  # slotting locks the room (also under a transactional test database)
        return [
            Memory.objects.create(
                palace=palace,
                kind=kind,
                content=content,
                occurred_at=WHEN,
                search_text=build_search_text(**f),
                embedding=vector,
                slot=slot_assign(palace=palace, kind=kind, actor=system),
            )
            for (content, kind), f, vector in zip(chosen, fields, vectors, strict=True)
        ]
