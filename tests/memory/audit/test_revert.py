"""Restoring from the audit console (memory/audit/revert.py): the permission and the reason every path needs, what
"revert this change" does for each kind of op row (a new change; history kept) and where it refuses, and the bulk
revert of one actor's changes in a time range (the preview says what the apply then does)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import Permission

from memory.audit import revert as restore
from memory.jobs import distill_run
from memory.lifecycle import memory_forget, memory_report, memory_restore, memory_update
from memory.models import Memory
from memory.save import SaveResult
from palace.actors import Actor
from palace.errors import InvalidInput, PermissionDenied
from palace.models import OpLog, Palace
from tests.fakes.memories import make_memory, topic_vectors

Save = Callable[..., SaveResult]
NIGHT = datetime(2026, 11, 30, 1, 0, tzinfo=UTC)


def make_staff(make_user: Callable[..., Any], name: str, *codenames: str) -> Any:
    user = make_user(name)
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="memory", codename__in=codenames))
    return type(user).objects.get(pk=user.pk)  # a fresh object: permissions are cached per instance


@pytest.fixture
def keeper(make_user: Callable[..., Any]) -> Any:
    return make_staff(make_user, "keeper", "view_memory", "restore_memory")


@pytest.fixture
def auditor(make_user: Callable[..., Any]) -> Any:
    return make_staff(make_user, "auditor", "view_memory", "view_memory_body")


def saved(save: Save, text: str) -> Memory:
    memory = save(text).memory
    assert memory is not None
    return memory


def last_op(op: str) -> OpLog:
    return OpLog.objects.filter(op=op).latest("pk")


def test_restore_needs_the_permission_and_a_reason_and_writes_the_staff_actor(
    save: Save, alice_actor: Actor, keeper: Any, auditor: Any
) -> None:
    memory = saved(save, "The backup bucket is s3://atrium-backups in eu-west-1.")
    memory_forget(memory_id=memory.pk, actor=alice_actor, reason="cleanup")
    with pytest.raises(PermissionDenied):
        restore.memory_restore_as_staff(memory_id=memory.pk, staff=auditor, reason="mistake")
    with pytest.raises(InvalidInput, match="reason"):
        restore.memory_restore_as_staff(memory_id=memory.pk, staff=keeper, reason="  ")
    memory.refresh_from_db()
    assert memory.status == "forgotten"
    restore.memory_restore_as_staff(memory_id=memory.pk, staff=keeper, reason="forgotten by mistake")
    memory.refresh_from_db()
    assert memory.status == "active"
    row = last_op("memory.restore")
    assert (row.target_id, row.actor_user_id, row.actor_kind, row.actor_name, row.reason) == (
        memory.pk,
        keeper.pk,
        "system",
        "admin",
        "forgotten by mistake",
    )


def test_checkout_from_the_console_uses_the_checkout_service(save: Save, alice_actor: Actor, keeper: Any) -> None:
    v1 = saved(save, "The API server listens on port 8000.")
    v2 = memory_update(memory_id=v1.pk, actor=alice_actor, content="The API server listens on port 8001.")
    new = restore.memory_checkout_as_staff(memory_id=v1.pk, staff=keeper, reason="the move was rolled back")
    assert new.content == v1.content and new.supersedes_id == v2.pk
    row = last_op("memory.checkout")
    assert row.detail["checkout_of"] == v1.pk and row.actor_user_id == keeper.pk


def test_undo_a_distillation_from_the_console(alice_palace: Palace, keeper: Any) -> None:
    texts = ["Deploys go out on Tuesdays.", "Never deploy on Fridays.", "Deploys go out after the stand-up."]
    members = [
        make_memory(alice_palace, content=t, kind="decision", placard="Deploy days", embedding=v)
        for t, v in zip(texts, topic_vectors(3, seed=7), strict=True)
    ]
    (applied,) = distill_run(mode="apply", llm=None).clusters
    assert applied.rule_id is not None
    done = restore.distill_revert_as_staff(rule_id=applied.rule_id, staff=keeper, reason="too coarse")
    assert done.rule.status == "archived" and sorted(done.restored) == [m.pk for m in members]
    assert last_op("memory.distill_undo").actor_user_id == keeper.pk


def test_revert_a_forget_restores_and_a_second_revert_is_refused(save: Save, alice_actor: Actor, keeper: Any) -> None:
    memory = saved(save, "The release train leaves every second Wednesday.")
    forget = memory_forget(memory_id=memory.pk, actor=alice_actor, reason="stale")
    forget_row = last_op("memory.forget")
    plan = restore.op_revert_preview(op_id=forget_row.pk, staff=keeper)
    assert plan.action == "restore" and "forgotten → active" in plan.describe
    restore.op_revert(op_id=forget_row.pk, staff=keeper, reason="not stale")
    forget.refresh_from_db()
    assert forget.status == "active"
    record = last_op("memory.revert")
    assert record.detail["reverts"] == forget_row.pk and record.detail["action"] == "restore"
    assert OpLog.objects.filter(pk=forget_row.pk, op="memory.forget").exists()  # history kept
    with pytest.raises(InvalidInput, match="already reverted"):
        restore.op_revert(op_id=forget_row.pk, staff=keeper, reason="again")


def test_revert_a_save_forgets_it_and_a_correction_checks_out_the_old_text(
    save: Save, alice_actor: Actor, keeper: Any
) -> None:
    memory = saved(save, "The on-call phone rotates on Mondays at nine.")
    save_row = OpLog.objects.get(op="memory.save", target_id=memory.pk)
    corrected = memory_update(memory_id=memory.pk, actor=alice_actor, content="The on-call phone rotates on Fridays.")
    update_row = last_op("memory.update")
    # The save cannot be reverted while its memory is corrected; the correction can.
    assert "corrected since" in restore.op_revert_preview(op_id=save_row.pk, staff=keeper).refused
    restore.op_revert(op_id=update_row.pk, staff=keeper, reason="the correction was wrong")
    corrected.refresh_from_db()
    head = Memory.objects.get(supersedes_id=corrected.pk)
    assert corrected.status == "superseded" and head.content == memory.content and head.status == "active"
    assert last_op("memory.revert").detail["new_memory"] == head.pk
    # A fresh save is forgotten by its revert.
    other = saved(save, "Lunch orders close at eleven thirty sharp.")
    restore.op_revert(
        op_id=OpLog.objects.get(op="memory.save", target_id=other.pk).pk, staff=keeper, reason="agent noise"
    )
    other.refresh_from_db()
    assert other.status == "forgotten"


def test_revert_a_restore_puts_an_archived_memory_back_in_the_archive(
    alice_palace: Palace, alice_actor: Actor, keeper: Any
) -> None:
    memory = make_memory(alice_palace, content="An old fact about the build farm", status="archived")
    memory_restore(memory_id=memory.pk, actor=alice_actor, reason="needed it")
    restore.op_revert(op_id=last_op("memory.restore").pk, staff=keeper, reason="was fine archived")
    memory.refresh_from_db()
    assert memory.status == "archived"
    assert last_op("memory.archive").detail == {"from_status": "active"}


def test_revert_a_report_sets_the_confidence_back_unless_it_changed_since(
    save: Save, alice_actor: Actor, keeper: Any
) -> None:
    memory = saved(save, "Restarting the worker clears the stuck queue.")
    memory_report(memory_id=memory.pk, actor=alice_actor, outcome="failure")
    first = last_op("memory.report")
    memory_report(memory_id=memory.pk, actor=alice_actor, outcome="failure")
    second = last_op("memory.report")
    assert "changed since" in restore.op_revert_preview(op_id=first.pk, staff=keeper).refused
    restore.op_revert(op_id=second.pk, staff=keeper, reason="the report was a mistake")
    memory.refresh_from_db()
    assert memory.confidence == pytest.approx(second.detail["confidence_before"])
    assert last_op("memory.revert").detail["before"] == {"confidence": second.detail["confidence"]}


def test_a_revert_that_is_not_meaningful_is_refused_with_the_reason(
    save: Save, alice_actor: Actor, keeper: Any, auditor: Any
) -> None:
    memory = saved(save, "The staging cluster has three worker nodes.")
    save(memory.content)  # a restatement: merged into the memory
    merge_row = last_op("memory.merge")
    with pytest.raises(InvalidInput, match="merge reinforced an existing memory"):
        restore.op_revert(op_id=merge_row.pk, staff=keeper, reason="undo")
    palace_row = OpLog.objects.filter(op="palace.create").latest("pk")
    with pytest.raises(InvalidInput, match="palaces are kept, never deleted"):
        restore.op_revert(op_id=palace_row.pk, staff=keeper, reason="undo")
    # Without the permission, even a meaningful revert is refused; with it, it goes through.
    memory_forget(memory_id=memory.pk, actor=alice_actor, reason="x")
    row = last_op("memory.forget")
    with pytest.raises(PermissionDenied):
        restore.op_revert(op_id=row.pk, staff=auditor, reason="undo")
    with pytest.raises(PermissionDenied):
        restore.op_revert_preview(op_id=row.pk, staff=auditor)
    assert restore.op_revert_preview(op_id=row.pk, staff=keeper).action == "restore"
    restore.op_revert(op_id=row.pk, staff=keeper, reason="undo")
    memory.refresh_from_db()
    assert memory.status == "active"


# --- bulk ----------------------------------------------------------------------------------------------------------


def test_bulk_revert_of_a_tokens_night_previews_then_applies_the_same(
    alice: Any, alice_palace: Palace, alice_actor: Actor, keeper: Any, save: Save
) -> None:
    """A misbehaving agent token, last night: it saved two memories, corrected one of them and one of alice's, and
    forgot another of alice's. Alice's own change in the same night and the token's change after it are not
    touched."""
    token = Actor.for_token(alice, 77, "night-agent")
    with time_machine.travel(NIGHT - timedelta(days=1), tick=False):
        kept = save("The VPN needs the hardware key.").memory
        fixed = save("Invoices go out on the first.").memory
    assert kept is not None and fixed is not None
    with time_machine.travel(NIGHT, tick=False):
        junk = save("The moon is made of green cheese.", actor=token).memory
        churn = save("Coffee machine code is 4411.", actor=token).memory
        assert junk is not None and churn is not None
    with time_machine.travel(NIGHT + timedelta(minutes=5), tick=False):
        churned = memory_update(memory_id=churn.pk, actor=token, content="Coffee machine code is 9911 now.")
        wrong = memory_update(memory_id=fixed.pk, actor=token, content="Invoices go out on the fifteenth.")
        memory_forget(memory_id=kept.pk, actor=token, reason="irrelevant")
    with time_machine.travel(NIGHT + timedelta(minutes=10), tick=False):
        own = save("Alice moved the standup to ten.").memory
    with time_machine.travel(NIGHT + timedelta(days=1), tick=False):
        later = save("Parking level three is closed.", actor=token).memory
    assert own is not None and later is not None

    selection = restore.Selection(since=NIGHT - timedelta(hours=1), until=NIGHT + timedelta(hours=6), token_id=77)
    preview = restore.bulk_revert_preview(selection=selection, staff=keeper)
    planned = {p.op_id: p for p in preview.plans}
    assert len(planned) == 5  # two saves, two corrections, one forget; nothing of alice's, nothing later
    assert all(p.action for p in preview.plans), [p.refused for p in preview.plans]
    actions = sorted(p.action for p in preview.plans)
    assert actions == ["checkout", "folded", "forget", "forget", "restore"]
    assert Memory.objects.get(pk=kept.pk).status == "forgotten"  # a preview changes nothing
    with pytest.raises(InvalidInput, match="reason"):
        restore.bulk_revert_apply(selection=selection, staff=keeper, reason="")

    result = restore.bulk_revert_apply(selection=selection, staff=keeper, reason="agent misbehaved overnight")
    assert sorted(p.op_id for p in result.done) == sorted(planned) and not result.failed
    state = {m.pk: m for m in Memory.objects.filter(palace=alice_palace)}
    assert state[kept.pk].status == "active"  # the forget undone
    assert state[junk.pk].status == "forgotten"  # its saves undone
    assert state[churn.pk].status == "superseded" and state[churned.pk].status == "forgotten"  # the whole chain
    assert state[wrong.pk].status == "superseded"  # the correction of alice's memory undone by a checkout
    head = Memory.objects.get(supersedes_id=wrong.pk)
    assert head.content == fixed.content and head.status == "active"
    assert state[own.pk].status == "active" and state[later.pk].status == "active"  # outside the selection
    assert result.op_id is not None
    summary = OpLog.objects.get(pk=result.op_id)
    assert summary.op == "memory.bulk_revert" and summary.reason == "agent misbehaved overnight"
    assert sorted(summary.detail["done"]) == sorted(planned) and summary.actor_user_id == keeper.pk
    # Run again: everything is already reverted, nothing changes.
    again = restore.bulk_revert_preview(selection=selection, staff=keeper)
    assert all("already reverted" in p.refused for p in again.plans)


def test_bulk_revert_by_user_and_its_refusals(alice: Any, save: Save, alice_actor: Actor, keeper: Any) -> None:
    with time_machine.travel(NIGHT, tick=False):
        memory = saved(save, "The printer on floor two needs toner.")
        memory_forget(memory_id=memory.pk, actor=alice_actor, reason="done")
        memory_restore(memory_id=memory.pk, actor=alice_actor, reason="not done")
    selection = restore.Selection(since=NIGHT, until=NIGHT + timedelta(seconds=1), user_id=alice.pk)
    preview = restore.bulk_revert_preview(selection=selection, staff=keeper)
    # Newest first: the restore is taken back (forgotten), then the forget is undone (active), then the save
    # forgets it: the state before the night.
    assert [p.op for p in preview.plans] == ["memory.restore", "memory.forget", "memory.save"]
    assert [p.action for p in preview.plans] == ["forget", "restore", "forget"]
    restore.bulk_revert_apply(selection=selection, staff=keeper, reason="reset the night")
    memory.refresh_from_db()
    assert memory.status == "forgotten"
    with pytest.raises(InvalidInput, match="after its start"):
        restore.bulk_revert_preview(
            selection=restore.Selection(since=NIGHT, until=NIGHT, user_id=alice.pk), staff=keeper
        )
    with pytest.raises(InvalidInput, match="either a user or a token"):
        restore.bulk_revert_preview(selection=restore.Selection(since=NIGHT, until=NIGHT), staff=keeper)
