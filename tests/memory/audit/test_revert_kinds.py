"""Where a revert of a change that is not a memory's is refused, and that the reason says why (memory/audit:
members.py, entities.py, versions.py, admin_edits.py): changed since, the last owner, what the op row does not
record, a secret, a service that owns the saving, additions and deletions, a bulk run; and the permission each kind
needs besides `memory.restore_memory`. Each refusal sits beside the revert that goes through (the positive
control), and a refusal changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from memory.audit import revert as restore
from memory.context import HandoffInput, curated_edit, curated_text, handoff_save
from memory.knowledge import entity_merge, entity_rename
from memory.models import Entity, ProfileVersion
from palace import membership
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, PermissionDenied
from palace.models import Membership, OpLog, Palace
from palace.services import member_remove, member_set
from tests.entity_rows import make_entity
from tests.palace.admin.forms import form_data


def make_staff(make_user: Callable[..., Any], name: str, *codenames: str) -> Any:
    user = make_user(name)
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return type(user).objects.get(pk=user.pk)  # a fresh object: permissions are cached per instance


@pytest.fixture
def keeper(make_user: Callable[..., Any]) -> Any:
    """A restorer holding every kind's permission."""
    kinds = ("change_membership", "change_entity", "change_profileversion", "change_handoffversion", "change_palace")
    return make_staff(make_user, "keeper", "restore_memory", "change_user", "change_judgesettings", *kinds)


def latest(op: str) -> OpLog:
    return OpLog.objects.filter(op=op).latest("pk")


def refused(row: OpLog, staff: Any) -> str:
    plan = restore.op_revert_preview(op_id=row.pk, staff=staff)
    assert not plan.doable, plan.describe
    with pytest.raises(InvalidInput) as caught:
        restore.op_revert(op_id=row.pk, staff=staff, reason="try")
    assert not OpLog.objects.filter(op="memory.revert", detail__reverts=row.pk).exists()
    return str(caught.value)


def test_each_kind_needs_its_permission(project: Palace, alice: Any, bob: Any, make_user: Callable[..., Any]) -> None:
    membership.member_role_change(palace_id=project.pk, username="bob", role="editor", actor=Actor.for_user(alice))
    row = latest("member.set")
    restorer = make_staff(make_user, "restorer", "restore_memory")
    plan = restore.op_revert_preview(op_id=row.pk, staff=restorer)
    assert plan.missing_permission and "palace.change_membership" in plan.refused and not plan.doable
    with pytest.raises(PermissionDenied, match="palace.change_membership"):
        restore.op_revert(op_id=row.pk, staff=restorer, reason="try")
    assert Membership.objects.get(palace=project, user=bob).role == "editor"
    allowed = make_staff(make_user, "allowed", "restore_memory", "change_membership")
    assert restore.op_revert(op_id=row.pk, staff=allowed, reason="back").doable
    assert Membership.objects.get(palace=project, user=bob).role == "viewer"


def test_member_reverts_refused_when_changed_since_or_the_last_owner_would_go(
    project: Palace, alice: Any, bob: Any, charlie: Any, keeper: Any
) -> None:
    owner = Actor.for_user(alice)
    membership.member_role_change(palace_id=project.pk, username="bob", role="editor", actor=owner)
    promoted = latest("member.set")
    membership.member_role_change(palace_id=project.pk, username="bob", role="owner", actor=owner)
    assert "bob is owner now, not editor" in refused(promoted, keeper)
    member_set(palace=project, user=charlie, role="owner", actor=owner)  # direct add: a member.set row
    added = latest("member.set")
    membership.member_remove_by(palace_id=project.pk, username="bob", actor=owner)
    membership.project_leave(palace_id=project.pk, actor=owner)
    assert "only owner" in refused(added, keeper)  # removing charlie would leave the project without one
    assert Membership.objects.get(palace=project, user=charlie).role == "owner"
    left = latest("member.leave")
    restore.op_revert(op_id=left.pk, staff=keeper, reason="alice left by mistake")  # the positive control
    assert Membership.objects.get(palace=project, user=alice).role == "owner"


def test_a_removal_that_did_not_record_the_role_is_refused_with_that_reason(
    project: Palace, bob: Any, keeper: Any, system: Actor
) -> None:
    member_remove(palace=project, user=bob, actor=system)  # palace.services: the row names the user only
    assert "does not record the role" in refused(latest("member.remove"), keeper)
    assert not Membership.objects.filter(palace=project, user=bob).exists()


def test_version_reverts_refused_when_moved_on_and_a_first_handoff(alice: Any, project: Palace, keeper: Any) -> None:
    owner = Actor.for_user(alice)
    curated_edit(palace=project, actor=owner, content="v1 text", expected_version=0)
    first = latest("profile.edit")
    curated_edit(palace=project, actor=owner, content="v2 text", expected_version=1)
    assert "moved on since (now version 2" in refused(first, keeper)
    restore.op_revert(op_id=latest("profile.edit").pk, staff=keeper, reason="v2 was wrong")
    assert curated_text(palace_id=project.pk) == "v1 text"
    handoff_save(palace=project, actor=owner, data=HandoffInput(doing="starting"), expected_version=0)
    assert "first handoff" in refused(latest("handoff.save"), keeper)


def test_a_first_profile_edit_reverts_to_an_empty_profile(alice: Any, project: Palace, keeper: Any) -> None:
    curated_edit(palace=project, actor=Actor.for_user(alice), content="We ship on Fridays.", expected_version=0)
    restore.op_revert(op_id=latest("profile.edit").pk, staff=keeper, reason="not agreed")
    assert curated_text(palace_id=project.pk) == ""
    assert list(
        ProfileVersion.objects.filter(palace=project).values_list("version", flat=True).order_by("version")
    ) == [
        1,
        2,
    ]


def test_entity_reverts_refused_when_a_name_was_taken_or_the_merge_listed_nothing(
    alice: Any, alice_palace: Palace, keeper: Any
) -> None:
    actor = Actor.for_user(alice)
    bob_e = make_entity(alice_palace, "Bob")
    entity_rename(entity_id=bob_e.pk, name="Robert", actor=actor)
    make_entity(alice_palace, "Bob")  # a new entity took the old name
    assert "has the old name now" in refused(latest("entity.rename"), keeper)
    one, two = make_entity(alice_palace, "Carol"), make_entity(alice_palace, "Caroline")
    entity_merge(entity_id=one.pk, into_id=two.pk, actor=actor)
    merge = latest("entity.merge")
    old_style = OpLog.objects.create(  # a merge written before merges listed what they moved
        op="entity.merge", actor_kind="user", actor_name="alice", actor_user=alice, palace=alice_palace,
        target_kind="entity", target_id=two.pk, detail={k: v for k, v in merge.detail.items() if k != "undo"},
    )  # fmt: skip
    assert "does not list which links and facts" in refused(old_style, keeper)
    restore.op_revert(op_id=merge.pk, staff=keeper, reason="two people")  # the positive control
    assert Entity.objects.get(pk=one.pk).merged_into_id is None


def _root(make_user: Callable[..., Any]) -> Client:
    client = Client()
    client.force_login(make_user("root", admin=True))
    return client


def _admin_post(root: Client, url: str, form_id: str, edits: dict[str, Any]) -> OpLog:
    data = form_data(root.get(url).content.decode(), form_id, edits)
    assert root.post(url, {**data, "reason": "tidying"}).status_code == 302
    return OpLog.objects.filter(op__startswith="admin.").latest("pk")


def test_admin_edit_reverts_refused_with_the_reason(
    project: Palace, bob: Any, keeper: Any, make_user: Callable[..., Any]
) -> None:
    root = _root(make_user)
    password = {"password1": "N3w-secret-pass!", "password2": "N3w-secret-pass!", "usable_password": "true"}
    row = _admin_post(root, f"/admin/auth/user/{bob.pk}/password/", "user_form", password)
    assert "secret or a body" in refused(row, keeper)
    judge = _admin_post(
        root, "/admin/memory/judgesettings/add/", "judgesettings_form", {"base_url": "http://127.0.0.1:9/v1",
        "model": "judge-mini", "timeout_ms": "3000"},
    )  # fmt: skip
    assert judge.op == "admin.add" and "deleting the row on its admin page" in refused(judge, keeper)
    changed = _admin_post(root, f"/admin/memory/judgesettings/{judge.target_id}/change/", "judgesettings_form",
                          {"model": "judge-maxi"})  # fmt: skip
    assert "judge_settings_update" in refused(changed, keeper)
    renamed = _admin_post(root, f"/admin/palace/palace/{project.pk}/change/", "palace_form", {"name": "Demo two"})
    Palace.objects.filter(pk=project.pk).update(name="Demo three")  # changed since
    assert "name changed since" in refused(renamed, keeper)
    Palace.objects.filter(pk=project.pk).update(name="Demo two")
    restore.op_revert(op_id=renamed.pk, staff=keeper, reason="the old name")  # the positive control
    assert Palace.objects.get(pk=project.pk).name == project.name


def test_bulk_restore_leaves_other_kinds_to_the_single_revert(project: Palace, alice: Any, keeper: Any) -> None:
    start = timezone.now() - timedelta(seconds=1)
    membership.member_role_change(palace_id=project.pk, username="bob", role="editor", actor=Actor.for_user(alice))
    selection = restore.Selection(since=start, until=timezone.now() + timedelta(seconds=1), user_id=alice.pk)
    (plan,) = restore.bulk_revert_preview(selection=selection, staff=keeper).plans
    assert plan.op == "member.set" and "bulk restore reverts memories only" in plan.refused
    assert restore.op_revert_preview(op_id=plan.op_id, staff=keeper).doable  # alone, it is revertible


def test_an_admin_edit_whose_old_value_was_taken_since_is_a_conflict_not_an_error(
    bob: Any, keeper: Any, make_user: Callable[..., Any]
) -> None:
    root = _root(make_user)
    renamed = _admin_post(root, f"/admin/auth/user/{bob.pk}/change/", "user_form", {"username": "robert"})
    make_user("bob")  # someone else has the name now
    assert restore.op_revert_preview(op_id=renamed.pk, staff=keeper).doable  # the field itself did not change
    with pytest.raises(Conflict, match="refuses the old values"):
        restore.op_revert(op_id=renamed.pk, staff=keeper, reason="his old name")
    bob.refresh_from_db()
    assert bob.username == "robert" and not OpLog.objects.filter(op="memory.revert").exists()
