"""What the judge's tests start from, made once for every door's tests: an open contradiction made through the real
write pipeline (two saves of one fact with different values), and a pending distillation proposal (three near
duplicates, distilled by rules)."""

from __future__ import annotations

from typing import Any, NamedTuple

from memory.jobs import distill_proposals_store, distill_run
from memory.models import DistillProposal, Edge, Memory
from memory.save import memory_save
from palace.actors import Actor
from palace.models import Palace
from tests.fakes.memories import make_memory, topic_vectors

OLDER = "The API server listens on port 8000."
NEWER = "The API server listens on port 8001."
DEPLOY = ["Deploys go out on Tuesdays.", "We deploy every Tuesday.", "Tuesday is the deploy day."]


class Contradiction(NamedTuple):
    older: Memory
    newer: Memory
    edge: Edge  # the first open edge the newer save reported

    @property
    def ids(self) -> tuple[int, int, int]:
        """(older, newer, edge) primary keys."""
        return self.older.pk, self.newer.pk, self.edge.pk


def contradiction(palace: Palace, user: Any, older: str = OLDER, newer: str = NEWER, **save: Any) -> Contradiction:
    """`older` then `newer` saved as `user` into `palace`; the second is deferred with an open edge."""
    actor = Actor.for_user(user)
    first = memory_save(palace=palace, actor=actor, content=older, kind="fact", **save)
    second = memory_save(palace=palace, actor=actor, content=newer, kind="fact", **save)
    assert first.memory is not None and second.memory is not None, "both saves must store a memory"
    assert second.disposition == "defer" and second.edges, "the pair must make an open edge"
    return Contradiction(first.memory, second.memory, Edge.objects.get(pk=second.edges[0]))


def deploy_day_proposal(palace: Palace) -> DistillProposal:
    """Three near-duplicate decisions (DEPLOY) in `palace`, and the one proposal the rules distil from them."""
    for text, v in zip(DEPLOY, topic_vectors(3, seed=7), strict=True):
        make_memory(palace, content=text, kind="decision", placard="Deploy days", embedding=v)
    (proposal,) = distill_proposals_store(result=distill_run(mode="suggest", llm=None))
    return proposal
