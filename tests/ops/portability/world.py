"""A palace with one of everything an export carries, for the portability tests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction

from memory.models import Edge, Entity, Fact, HandoffVersion, Memory, MemoryEntity, ProfileVersion
from palace.models import Palace
from palace.oplog import oplog_write
from review.services import review_enrol, review_grade
from tests.fakes.memories import SYSTEM, T0, make_memory, topic_vectors

# Secrets as an older server may have stored them (the write pipeline scrubs them today; the export's second pass
# must catch them in rows that predate a rule).
SECRET_KEY = "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
SECRET_TOKEN = "ghp_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"


def build_world(owner: Any, palace: Palace) -> dict[str, Any]:
    """Memories (a corrected one with its old version, a forgotten one, vectors), an edge, a review card, an
    entity with a link and a fact, a profile and a handoff version, and op rows, all in `palace`."""
    vectors = topic_vectors(3, seed=7)
    first = make_memory(palace, "the deploy runs on Fridays after the freeze", placard="deploys", embedding=vectors[0])
    newer = make_memory(
        palace,
        "the deploy runs on Thursdays now",
        placard="deploys",
        embedding=vectors[0],
        supersedes=first,
        created_at=T0 + timedelta(days=1),
    )
    Memory.objects.filter(pk=first.pk).update(status=Memory.Status.SUPERSEDED)
    Memory.objects.filter(pk=newer.pk).update(version=2)
    leak = make_memory(
        palace,
        f"{SECRET_KEY} is the staging key and {SECRET_TOKEN} the bot token, kept for the nightly job",
        kind="skill",
        embedding=vectors[1],
    )
    gone = make_memory(palace, "an old note nobody needs", status="forgotten", embedding=vectors[2])
    Memory.objects.filter(pk=gone.pk).update(epitaph="obsolete")
    with transaction.atomic():
        edge = Edge.objects.create(palace=palace, from_memory=leak, to_memory=newer, kind="related", weight=0.4)
        oplog_write(
            op="memory.correct",
            actor=SYSTEM,
            palace=palace,
            target_kind="memory",
            target_id=newer.pk,
            detail={"from": first.pk},
        )
        entity = Entity.objects.create(
            palace=palace, name="Staging", kind="place", key="staging", aliases=["stage"], alias_keys=["stage"]
        )
        MemoryEntity.objects.create(palace=palace, memory=leak, entity=entity, source="rules")
        fact = Fact.objects.create(
            palace=palace,
            entity=entity,
            predicate="runs",
            content="staging runs Postgres 17",
            valid_from=T0,
            source_memory=leak,
            created_by=owner,
        )
        Fact.objects.create(
            palace=palace,
            entity=entity,
            predicate="runs",
            content="staging runs Postgres 18",
            valid_from=T0 + timedelta(days=3),
            replaces=fact,
            created_by=owner,
        )
        ProfileVersion.objects.create(palace=palace, version=1, content="likes small commits", created_by=owner)
        HandoffVersion.objects.create(
            palace=palace,
            user=owner,
            version=1,
            doing="writing the exporter",
            next_steps=["import"],
            files=["ops/portability/exporting.py"],
        )
    review_enrol(memory_id=newer.pk, actor=SYSTEM, now=T0)
    review_grade(memory_id=newer.pk, grade=4, actor=SYSTEM, now=T0 + timedelta(days=1))
    return {"first": first, "newer": newer, "leak": leak, "gone": gone, "edge": edge, "entity": entity}
