"""Deciding open contradictions (memory.lifecycle.resolve) and closing them when a side is corrected or forgotten."""

from __future__ import annotations

from typing import Any

import pytest

from memory.lifecycle import edge_resolve, memory_forget, memory_update
from memory.models import Edge, Memory
from memory.selectors import memory_stats
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from palace.models import OpLog, Palace
from tests.fakes.judging import contradiction


def _open(palace: Palace) -> int:
    return memory_stats(palace_ids=[palace.pk]).pending_contradictions


def test_keep_newer_supersedes_the_older(alice: Any, alice_actor: Actor, alice_palace: Palace) -> None:
    older, newer, edge = contradiction(alice_palace, alice)
    assert _open(alice_palace) == 1
    result = edge_resolve(edge_id=edge.pk, decision="keep_newer", reason="the port moved", actor=alice_actor)
    older.refresh_from_db()
    newer.refresh_from_db()
    edge.refresh_from_db()
    assert (result.newer_id, result.older_id) == (newer.pk, older.pk)
    assert older.status == "superseded" and newer.status == "active" and newer.supersedes_id == older.pk
    assert (edge.status, edge.resolution, edge.resolution_reason) == ("confirmed", "keep_newer", "the port moved")
    assert edge.decided_by_id == alice_actor.user_id and edge.decided_at is not None
    assert Edge.objects.filter(kind="supersedes", from_memory=newer, to_memory=older).exists()
    op = OpLog.objects.get(op="edge.decide", target_id=edge.pk)
    assert (
        op.detail["decision"] == "keep_newer"
        and op.reason == "the port moved"
        and op.actor_user_id == alice_actor.user_id
    )
    assert OpLog.objects.filter(op="memory.replace", target_id=older.pk).exists()
    assert _open(alice_palace) == 0  # Today's count reflects it at once


def test_keep_older_forgets_the_newer_with_the_reason(alice: Any, alice_actor: Actor, alice_palace: Palace) -> None:
    older, newer, edge = contradiction(alice_palace, alice)
    edge_resolve(edge_id=edge.pk, decision="keep_older", reason="8001 was a typo", actor=alice_actor)
    newer.refresh_from_db()
    older.refresh_from_db()
    assert newer.status == "forgotten" and newer.epitaph == "8001 was a typo" and older.status == "active"
    assert Edge.objects.get(pk=edge.pk).status == "confirmed"
    assert OpLog.objects.filter(op="memory.forget", target_id=newer.pk).exists()
    assert OpLog.objects.filter(op="edge.decide", target_id=edge.pk, detail__decision="keep_older").exists()
    assert _open(alice_palace) == 0


def test_both_stand_dismisses_the_edge_and_needs_a_reason(alice: Any, alice_palace: Palace, alice_actor: Actor) -> None:
    older, newer, edge = contradiction(alice_palace, alice)
    with pytest.raises(InvalidInput):
        edge_resolve(edge_id=edge.pk, decision="both_stand", actor=alice_actor)
    edge_resolve(edge_id=edge.pk, decision="both_stand", reason="prod vs staging", actor=alice_actor)
    edge.refresh_from_db()
    assert (edge.status, edge.resolution_reason) == ("dismissed", "prod vs staging")
    assert set(Memory.objects.values_list("status", flat=True)) == {"active"}
    assert OpLog.objects.filter(op="edge.decide", target_id=edge.pk, detail__decision="both_stand").exists()


def test_merge_writes_a_new_text_that_supersedes_both(alice: Any, alice_palace: Palace, alice_actor: Actor) -> None:
    older, newer, edge = contradiction(alice_palace, alice)
    with pytest.raises(InvalidInput):
        edge_resolve(edge_id=edge.pk, decision="merge", actor=alice_actor)
    content = "The API server listens on port 8001 since March; 8000 before."
    result = edge_resolve(edge_id=edge.pk, decision="merge", content=content, reason="both true", actor=alice_actor)
    merged = result.new_memory
    assert merged is not None and merged.content == content and merged.supersedes_id == older.pk
    older.refresh_from_db()
    newer.refresh_from_db()
    assert older.status == "superseded" and newer.status == "superseded"
    assert Edge.objects.filter(kind="supersedes", from_memory=merged, to_memory=newer).exists()
    assert Edge.objects.get(pk=edge.pk).status == "confirmed"
    assert OpLog.objects.get(op="edge.decide", target_id=edge.pk).detail["new_memory"] == merged.pk
    assert OpLog.objects.filter(op="memory.update", target_id=merged.pk).exists()


def test_a_decided_edge_cannot_be_decided_again(alice: Any, alice_palace: Palace, alice_actor: Actor) -> None:
    _, _, edge = contradiction(alice_palace, alice)
    edge_resolve(edge_id=edge.pk, decision="both_stand", reason="fine", actor=alice_actor)
    with pytest.raises(Conflict):
        edge_resolve(edge_id=edge.pk, decision="keep_newer", actor=alice_actor)


def test_an_unknown_decision_is_refused(alice: Any, alice_palace: Palace, alice_actor: Actor) -> None:
    _, _, edge = contradiction(alice_palace, alice)
    with pytest.raises(InvalidInput):
        edge_resolve(edge_id=edge.pk, decision="flip_a_coin", actor=alice_actor)
    with pytest.raises(InvalidInput):
        edge_resolve(edge_id=edge.pk, decision="keep_newer", content="text is for merge", actor=alice_actor)


def test_an_outsiders_edge_answers_like_a_missing_one_and_a_viewer_is_refused(
    project: Palace, alice: Any, bob: Any, charlie: Any
) -> None:
    _, _, edge = contradiction(project, alice)
    with pytest.raises(NotFound, match="edge not found"):
        edge_resolve(edge_id=edge.pk, decision="both_stand", reason="x", actor=Actor.for_user(charlie))
    with pytest.raises(NotFound, match="edge not found"):
        edge_resolve(edge_id=999999, decision="both_stand", reason="x", actor=Actor.for_user(alice))
    with pytest.raises(PermissionDenied):  # bob is a viewer of the project
        edge_resolve(edge_id=edge.pk, decision="both_stand", reason="x", actor=Actor.for_user(bob))
    assert Edge.objects.get(pk=edge.pk).status == "pending" and not OpLog.objects.filter(op="edge.decide").exists()
    # Positive control: the owner decides it.
    edge_resolve(edge_id=edge.pk, decision="both_stand", reason="x", actor=Actor.for_user(alice))
    assert Edge.objects.get(pk=edge.pk).status == "dismissed"


def test_correcting_a_side_closes_its_open_edges(alice: Any, alice_actor: Actor, alice_palace: Palace) -> None:
    older, newer, edge = contradiction(alice_palace, alice)
    new = memory_update(memory_id=older.pk, actor=alice_actor, content="The API server listens on port 8002.")
    edge.refresh_from_db()
    assert (edge.status, edge.resolution) == ("closed", "corrected") and f"#{new.pk}" in edge.resolution_reason
    close = OpLog.objects.get(op="edge.close", target_id=edge.pk)
    assert close.detail["resolution"] == "corrected"
    assert OpLog.objects.get(op="memory.update", target_id=new.pk).detail["closed_edges"] == [edge.pk]
    assert _open(alice_palace) == 0


def test_forgetting_a_side_closes_its_open_edges_with_the_reason(
    alice: Any, alice_actor: Actor, alice_palace: Palace
) -> None:
    older, newer, edge = contradiction(alice_palace, alice)
    memory_forget(memory_id=newer.pk, actor=alice_actor, reason="wrong port")
    edge.refresh_from_db()
    assert (edge.status, edge.resolution, edge.resolution_reason) == ("closed", "forgotten", "wrong port")
    assert _open(alice_palace) == 0 and OpLog.objects.filter(op="edge.close", target_id=edge.pk).exists()


def test_the_upgrade_closes_edges_left_pending_about_a_gone_memory(
    alice: Any, alice_actor: Actor, alice_palace: Palace
) -> None:
    import importlib

    from django.apps import apps
    from django.db import connection

    older, newer, edge = contradiction(alice_palace, alice)
    # A second pending edge whose memories still stand.
    _, _, kept = contradiction(
        alice_palace, alice, "The CI pipeline uses Python 3.12.", "The CI pipeline uses Python 3.11."
    )
    Memory.objects.filter(pk=newer.pk).update(status="forgotten")  # as before this change: the edge stayed pending
    migration = importlib.import_module("memory.migrations.0013_judge_close_stale_edges")
    with connection.schema_editor() as editor:
        migration.close_stale(apps, editor)
    edge.refresh_from_db()
    assert (edge.status, edge.resolution) == ("closed", "forgotten") and f"#{newer.pk}" in edge.resolution_reason
    assert OpLog.objects.get(op="edge.close", target_id=edge.pk).actor_kind == "system"
    assert Edge.objects.get(pk=kept.pk).status == "pending"  # positive control: a live contradiction stays open
