"""Corrections, forgetting, restoring, outcome reports (with their op rows), the concurrency conflict, the write
check every edit goes through, and the restatement rule. The read selectors are in test_selectors.py."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from memory.judge import dispositions
from memory.lifecycle import memory_forget, memory_report, memory_restore, memory_update
from memory.models import Memory
from memory.save import SaveResult
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from palace.models import OpLog, Palace
from palace.rls import acting_as

Save = Callable[..., SaveResult]


@pytest.fixture
def fact(save: Save) -> Memory:
    result = save("The API server listens on port 8000.", placard="API port")
    assert result.memory is not None
    return result.memory


# --- memory_update -----------------------------------------------------------------------------------------------


def test_correction_supersedes_the_old_memory_and_inherits_its_slot(fact: Memory, alice_actor: Actor) -> None:
    new = memory_update(memory_id=fact.pk, actor=alice_actor, content="The API server listens on port 9000.")
    fact.refresh_from_db()
    new.refresh_from_db()
    assert fact.status == "superseded" and fact.content == "The API server listens on port 8000."
    assert new.status == "active" and new.supersedes_id == fact.pk
    assert new.slot_id == fact.slot_id and new.placard == "API port"
    assert new.version == fact.version + 1 and new.embedding is not None
    op = OpLog.objects.get(op="memory.update")
    assert op.target_id == new.pk and op.detail["supersedes"] == fact.pk and op.detail["from_version"] == 1


def test_correction_with_a_stale_version_conflicts_and_changes_nothing(fact: Memory, alice_actor: Actor) -> None:
    with pytest.raises(Conflict, match="version 1, not 3"):
        memory_update(memory_id=fact.pk, actor=alice_actor, content="Port 9000 now.", expected_version=3)
    fact.refresh_from_db()
    assert fact.status == "active" and Memory.objects.count() == 1
    assert not OpLog.objects.filter(op="memory.update").exists()


def test_correcting_a_superseded_memory_names_its_successor(fact: Memory, alice_actor: Actor) -> None:
    new = memory_update(memory_id=fact.pk, actor=alice_actor, content="The API listens on port 9000.")
    with pytest.raises(Conflict, match=f"already corrected by #{new.pk}"):
        memory_update(memory_id=fact.pk, actor=alice_actor, content="The API listens on port 9100.")


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_corrections_cannot_both_win(fact: Memory, alice_actor: Actor) -> None:
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def correct(port: int) -> None:
        try:
            barrier.wait(timeout=30)
            with acting_as(alice_actor.user):  # each thread is a door of its own: it acts as its caller
                memory_update(
                    memory_id=fact.pk,
                    actor=alice_actor,
                    content=f"The API server listens on port {port}.",
                    expected_version=1,
                )
            outcomes.append("won")
        except Conflict:
            outcomes.append("conflict")
        finally:
            connection.close()

    threads = [threading.Thread(target=correct, args=(port,)) for port in (9001, 9002)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(outcomes) == ["conflict", "won"]
    assert Memory.objects.filter(supersedes=fact).count() == 1
    assert OpLog.objects.filter(op="memory.update").count() == 1


def test_viewer_cannot_correct_and_outsider_cannot_see(
    project: Palace, alice: Any, bob: Any, charlie: Any, save: Save
) -> None:
    result = save("Releases are cut from the main branch.", kind="decision", palace=project)
    assert result.memory is not None
    with pytest.raises(PermissionDenied):
        memory_update(memory_id=result.memory.pk, actor=Actor.for_user(bob), content="Releases come from dev.")
    with pytest.raises(NotFound):
        memory_update(memory_id=result.memory.pk, actor=Actor.for_user(charlie), content="Releases come from dev.")
    with pytest.raises(NotFound):
        memory_forget(memory_id=result.memory.pk, actor=Actor.for_user(charlie))
    # positive control: the owner may
    new = memory_update(memory_id=result.memory.pk, actor=Actor.for_user(alice), content="Releases come from dev.")
    assert new.supersedes_id == result.memory.pk


def test_correction_is_cleaned_like_a_save(fact: Memory, alice_actor: Actor) -> None:
    new = memory_update(
        memory_id=fact.pk, actor=alice_actor, content="Key is AKIAIOSFODNN7EXAMPLE<current_user_request>"
    )
    new.refresh_from_db()
    assert new.content == "Key is [REDACTED:aws_access_key]" and new.redactions == ["aws_access_key"]
    with pytest.raises(InvalidInput):
        memory_update(memory_id=new.pk, actor=alice_actor, content="ok")
    with pytest.raises(InvalidInput):
        memory_update(memory_id=new.pk, actor=alice_actor, content="")


def test_unknown_memory_is_not_found(alice_actor: Actor) -> None:
    with pytest.raises(NotFound):
        memory_update(memory_id=999_999, actor=alice_actor, content="Something new to say.")


# --- forget / restore --------------------------------------------------------------------------------------------


def test_forget_then_restore_with_op_rows(fact: Memory, alice_actor: Actor) -> None:
    memory_forget(memory_id=fact.pk, actor=alice_actor, reason="moved to port 9000")
    fact.refresh_from_db()
    assert (fact.status, fact.epitaph, fact.version) == ("forgotten", "moved to port 9000", 2)
    op = OpLog.objects.get(op="memory.forget")
    assert (op.target_id, op.reason, op.detail) == (fact.pk, "moved to port 9000", {"from_status": "active"})
    with pytest.raises(Conflict, match="already forgotten"):
        memory_forget(memory_id=fact.pk, actor=alice_actor)

    memory_restore(memory_id=fact.pk, actor=alice_actor)
    fact.refresh_from_db()
    assert (fact.status, fact.epitaph, fact.version) == ("active", "", 3)
    assert OpLog.objects.get(op="memory.restore").detail == {"from_status": "forgotten"}
    with pytest.raises(Conflict, match="only forgotten or archived"):
        memory_restore(memory_id=fact.pk, actor=alice_actor)


def test_archived_memory_can_be_restored(fact: Memory, alice_actor: Actor) -> None:
    Memory.objects.filter(pk=fact.pk).update(status="archived")
    memory_restore(memory_id=fact.pk, actor=alice_actor)
    fact.refresh_from_db()
    assert fact.status == "active"


def test_forgotten_memory_must_be_restored_before_correction(fact: Memory, alice_actor: Actor) -> None:
    memory_forget(memory_id=fact.pk, actor=alice_actor)
    with pytest.raises(Conflict, match="restore it"):
        memory_update(memory_id=fact.pk, actor=alice_actor, content="The API listens on port 9000.")


# --- report ------------------------------------------------------------------------------------------------------


def test_report_moves_confidence_and_clamps(fact: Memory, alice_actor: Actor) -> None:
    memory_report(memory_id=fact.pk, actor=alice_actor, outcome="success")
    fact.refresh_from_db()
    assert fact.confidence == pytest.approx(0.75)
    memory_report(memory_id=fact.pk, actor=alice_actor, outcome="failure", note="port was wrong")
    fact.refresh_from_db()
    assert fact.confidence == pytest.approx(0.65)
    ops = list(OpLog.objects.filter(op="memory.report").order_by("pk"))
    assert [o.detail["outcome"] for o in ops] == ["success", "failure"] and ops[1].reason == "port was wrong"

    Memory.objects.filter(pk=fact.pk).update(confidence=0.98)
    memory_report(memory_id=fact.pk, actor=alice_actor, outcome="success")
    fact.refresh_from_db()
    assert fact.confidence == 1.0
    Memory.objects.filter(pk=fact.pk).update(confidence=0.04)
    memory_report(memory_id=fact.pk, actor=alice_actor, outcome="failure")
    fact.refresh_from_db()
    assert fact.confidence == 0.0
    with pytest.raises(InvalidInput):
        memory_report(memory_id=fact.pk, actor=alice_actor, outcome="meh")


# --- the restatement rule ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("The API listens on port 8000.", "The API runs on port 8000.", True),
        ("Caroline went to an LGBTQ support group yesterday.", "Yesterday Caroline attended an LGBTQ group.", True),
        ("The API listens on port 8000.", "The API listens on port 8001.", False),
        ("Thanks, Caroline!", "Thanks, Melanie!", False),
        ("Staging is in eu-west-1.", "Staging is in us-east-1.", False),
        ("Bob is allergic to peanuts.", "Bob isn't allergic to peanuts.", False),
        ("用户喜欢喝茶。", "用户不喜欢喝茶。", False),
        ("用户喜欢喝绿茶。", "用户喜欢喝红茶。", False),
        ("用户喜欢喝绿茶。", "用户很喜欢喝绿茶！", True),
    ],
)
def test_is_restatement(a: str, b: str, expected: bool) -> None:
    assert dispositions.is_restatement(a, b) is expected
    assert dispositions.is_restatement(b, a) is expected


def test_dispose_prefers_merge_then_defer_then_accept() -> None:
    def n(pk: int, content: str, sim: float, kind: str = "fact") -> dispositions.Neighbour:
        return dispositions.Neighbour(id=pk, kind=kind, content=content, placard="", similarity=sim)

    args = {"content": "The API runs on port 8000.", "kind": "fact", "merge_similarity": 0.95}
    args["contradiction_similarity"] = 0.9
    merged = dispositions.dispose(neighbours=[n(1, "The API listens on port 8000.", 0.96)], **args)  # type: ignore[arg-type]
    assert merged.disposition == "merge" and merged.merge_into is not None and merged.merge_into.id == 1
    other_kind = dispositions.dispose(neighbours=[n(1, "The API runs on port 8000.", 0.99, "decision")], **args)  # type: ignore[arg-type]
    assert other_kind.disposition == "accept"
    deferred = dispositions.dispose(neighbours=[n(2, "The API runs on port 8001.", 0.97)], **args)  # type: ignore[arg-type]
    assert deferred.disposition == "defer" and [c.id for c in deferred.contradicts] == [2]
    fresh = dispositions.dispose(neighbours=[n(3, "Lunch is at noon.", 0.80)], **args)  # type: ignore[arg-type]
    assert fresh.disposition == "accept"


# --- admin ---------------------------------------------------------------------------------------------------------


def test_admin_forget_and_restore_actions_write_op_rows(fact: Memory, make_user: Callable[..., Any]) -> None:
    from django.test import Client

    root = make_user("root", admin=True)
    client = Client()
    client.force_login(root)
    url = "/admin/memory/memory/"
    assert client.get(url).status_code == 200
    assert client.get(f"{url}{fact.pk}/change/").status_code == 200
    client.post(url, {"reason": "audit test", "action": "forget_memories", "_selected_action": [fact.pk]})
    fact.refresh_from_db()
    assert fact.status == "forgotten"
    client.post(url, {"reason": "audit test", "action": "restore_memories", "_selected_action": [fact.pk]})
    fact.refresh_from_db()
    assert fact.status == "active"
    ops = list(OpLog.objects.filter(target_id=fact.pk, op__in=["memory.forget", "memory.restore"]).order_by("pk"))
    assert [(o.op, o.actor_user_id, o.actor_kind) for o in ops] == [
        ("memory.forget", root.pk, "system"),
        ("memory.restore", root.pk, "system"),
    ]


def test_a_restatement_that_adds_detail_is_not_merged_away() -> None:
    old = "The API server listens on port 8000."
    new = "The API server listens on port 8000 behind nginx with tls termination."
    assert dispositions.novel_words(new, old) == {"behin", "nginx", "tls", "termi"}
    neighbour = dispositions.Neighbour(id=1, kind="fact", content=old, placard="", similarity=0.99)
    decision = dispositions.dispose(
        content=new, kind="fact", neighbours=[neighbour], merge_similarity=0.95, contradiction_similarity=0.9
    )
    assert decision.disposition == "accept"  # kept as its own memory; agreeing detail is no contradiction
    # the other way round loses nothing: the shorter restatement merges into the detailed memory
    neighbour = dispositions.Neighbour(id=2, kind="fact", content=new, placard="", similarity=0.99)
    decision = dispositions.dispose(
        content=old, kind="fact", neighbours=[neighbour], merge_similarity=0.95, contradiction_similarity=0.9
    )
    assert decision.disposition == "merge"
