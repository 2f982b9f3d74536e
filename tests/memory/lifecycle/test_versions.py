"""Versions you can bring back (issue 13): checkout of an earlier version, undoing a distillation, and the stored
distillation proposals (apply with the same code as memory_distill apply, reject), with outsiders refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memory.jobs import (
    distill_proposal_apply,
    distill_proposal_reject,
    distill_proposals_store,
    distill_revert,
    distill_run,
)
from memory.lifecycle import memory_checkout, memory_forget, memory_update
from memory.models import DistillProposal, Memory
from memory.save import SaveResult
from memory.selectors import distill_proposals_pending
from memory.tasks import distill_task
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound
from palace.models import OpLog, Palace
from tests.fakes.memories import make_memory, topic_vectors

Save = Callable[..., SaveResult]
DEPLOY = [
    "Deploys go out on Tuesdays. Never deploy on Fridays.",
    "Never deploy on Fridays. Production deploys need a second reviewer.",
    "Deploys go out on Tuesdays after the stand-up.",
]


@pytest.fixture
def chain(save: Save, alice_actor: Actor) -> list[Memory]:
    """v1 → v2 → v3 of one memory (v3 current)."""
    v1 = save("The API server listens on port 8000.").memory
    assert v1 is not None
    v2 = memory_update(memory_id=v1.pk, actor=alice_actor, content="The API server listens on port 8001.")
    v3 = memory_update(memory_id=v2.pk, actor=alice_actor, content="The API server listens on port 9000.")
    return [v1, v2, v3]


def test_checkout_makes_an_earlier_version_current_without_rewriting_history(
    chain: list[Memory], alice_actor: Actor
) -> None:
    v1, v2, v3 = chain
    new = memory_checkout(memory_id=v1.pk, actor=alice_actor, reason="the move was rolled back")
    assert new.pk not in (v1.pk, v2.pk, v3.pk)
    assert new.content == v1.content and new.status == "active"
    assert new.supersedes_id == v3.pk and new.version == v3.version + 1
    assert new.slot_id == v3.slot_id and new.embedding is not None
    for m in chain:
        m.refresh_from_db()
    assert (v1.status, v2.status, v3.status) == ("superseded", "superseded", "superseded")
    assert (v1.content, v2.content, v3.content) == (
        "The API server listens on port 8000.",
        "The API server listens on port 8001.",
        "The API server listens on port 9000.",
    )
    op = OpLog.objects.get(op="memory.checkout")
    assert op.target_id == new.pk and op.reason == "the move was rolled back"
    assert op.detail["checkout_of"] == v1.pk and op.detail["supersedes"] == v3.pk
    # A middle version can come back too, from the new head.
    again = memory_checkout(memory_id=v2.pk, actor=alice_actor)
    assert again.supersedes_id == new.pk and again.content == v2.content


def test_checkout_refuses_the_current_version_and_a_forgotten_head(chain: list[Memory], alice_actor: Actor) -> None:
    v1, _, v3 = chain
    with pytest.raises(Conflict, match="not an earlier version"):
        memory_checkout(memory_id=v3.pk, actor=alice_actor)
    memory_forget(memory_id=v3.pk, actor=alice_actor, reason="gone")
    with pytest.raises(Conflict, match="forgotten"):
        memory_checkout(memory_id=v1.pk, actor=alice_actor)


def test_an_outsider_cannot_check_out_and_the_owner_can(chain: list[Memory], charlie: Any, alice_actor: Actor) -> None:
    with pytest.raises(NotFound):
        memory_checkout(memory_id=chain[0].pk, actor=Actor.for_user(charlie))
    assert not OpLog.objects.filter(op="memory.checkout").exists()
    assert memory_checkout(memory_id=chain[0].pk, actor=alice_actor).content == chain[0].content


# --- distillation: undo and proposals --------------------------------------------------------------------------------


@pytest.fixture
def cluster(alice_palace: Palace) -> list[Memory]:
    return [
        make_memory(alice_palace, content=text, kind="decision", placard="Deploy days", embedding=v)
        for text, v in zip(DEPLOY, topic_vectors(3, seed=7), strict=True)
    ]


def test_undoing_a_distillation_restores_the_members_archives_the_rule_and_is_not_redone(
    cluster: list[Memory], alice_actor: Actor, charlie: Any
) -> None:
    (applied,) = distill_run(mode="apply", llm=None).clusters
    assert applied.rule_id is not None
    with pytest.raises(NotFound):
        distill_revert(rule_id=applied.rule_id, actor=Actor.for_user(charlie))
    done = distill_revert(rule_id=applied.rule_id, actor=alice_actor, reason="too coarse")
    assert done.restored == [m.pk for m in cluster]
    assert done.rule.status == "archived" and done.rule.epitaph == "distillation undone: too coarse"
    assert all(Memory.objects.get(pk=m.pk).status == "active" for m in cluster)
    assert OpLog.objects.get(op="memory.distill_undo").detail["members"] == [m.pk for m in cluster]
    assert OpLog.objects.filter(op="memory.unsupersede").count() == 3
    # The scheduled run does not merge the same members again; a second undo is refused.
    assert distill_run(mode="apply", llm=None).clusters == []
    with pytest.raises(Conflict):
        distill_revert(rule_id=applied.rule_id, actor=alice_actor)
    with pytest.raises(InvalidInput, match="not a distilled rule"):
        distill_revert(rule_id=cluster[0].pk, actor=alice_actor)


def test_the_scheduled_suggest_run_stores_proposals_once(cluster: list[Memory], alice_palace: Palace) -> None:
    assert distill_task(mode="suggest")["proposed"] == 1
    assert distill_task(mode="suggest")["proposed"] == 0  # the same cluster is not proposed twice
    (pending,) = distill_proposals_pending([alice_palace.pk])
    assert pending.proposal.member_ids == [m.pk for m in cluster]
    assert pending.proposal.producer == "rules" and "Never deploy on Fridays." in pending.proposal.content
    assert [m.pk for m in pending.members] == [m.pk for m in cluster]
    assert all(Memory.objects.get(pk=m.pk).status == "active" for m in cluster)  # suggest changes nothing
    assert distill_proposals_pending([alice_palace.pk + 1000]) == []


def test_applying_a_proposal_runs_the_distillation_and_an_outsider_is_refused(
    cluster: list[Memory], alice_actor: Actor, charlie: Any
) -> None:
    (proposal,) = distill_proposals_store(result=distill_run(mode="suggest", llm=None))
    with pytest.raises(NotFound, match="proposal not found"):
        distill_proposal_apply(proposal_id=proposal.pk, actor=Actor.for_user(charlie))
    applied = distill_proposal_apply(proposal_id=proposal.pk, actor=alice_actor)
    assert applied.status == "applied" and applied.rule_id is not None
    rule = Memory.objects.get(pk=applied.rule_id)
    assert rule.source_kind == "distill" and rule.meta["distilled_from"] == [m.pk for m in cluster]
    assert all(Memory.objects.get(pk=m.pk).status == "superseded" for m in cluster)
    assert OpLog.objects.filter(op="memory.distill", target_id=rule.pk).exists()
    assert OpLog.objects.get(op="distill.apply").detail["rule"] == rule.pk
    with pytest.raises(Conflict, match="already applied"):
        distill_proposal_apply(proposal_id=proposal.pk, actor=alice_actor)


def test_a_proposal_whose_members_changed_is_not_applied_and_can_be_rejected(
    cluster: list[Memory], alice_actor: Actor, charlie: Any
) -> None:
    (proposal,) = distill_proposals_store(result=distill_run(mode="suggest", llm=None))
    memory_forget(memory_id=cluster[1].pk, actor=alice_actor, reason="wrong")
    with pytest.raises(Conflict, match="member changed"):
        distill_proposal_apply(proposal_id=proposal.pk, actor=alice_actor)
    proposal.refresh_from_db()
    assert proposal.status == "pending"
    with pytest.raises(NotFound):
        distill_proposal_reject(proposal_id=proposal.pk, actor=Actor.for_user(charlie))
    rejected = distill_proposal_reject(proposal_id=proposal.pk, actor=alice_actor, reason="not one topic")
    assert rejected.status == "rejected" and rejected.reason == "not one topic"
    assert OpLog.objects.get(op="distill.reject").target_id == proposal.pk
    assert DistillProposal.objects.filter(status="pending").count() == 0
