""" "Revert this change" in the audit console for what is not a memory (memory/audit: members.py, entities.py,
versions.py, admin_edits.py), through the test client as staff: each change is made the way a person makes it, then
reverted from the console; the stored state is back to what it was, and the revert wrote its own op row (with the
reason and the staff member) that the console lists. Each revert is first refused to a restorer who lacks the
kind's permission (and to staff without the restore right), then done by one who holds it (conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import Group
from django.test import Client

from memory.context import HandoffInput, curated_edit, curated_text, handoff_current, handoff_save
from memory.knowledge import entity_merge, entity_rename
from memory.models import Entity, Fact, MemoryEntity, ProfileVersion
from palace import membership
from palace.actors import Actor
from palace.models import Membership, OpLog, Palace
from palace.services import member_set
from tests.entity_rows import make_entity
from tests.fakes.memories import make_memory
from tests.memory.admin.conftest import CONSOLE, revert_url
from tests.palace.admin.forms import form_data

Revert = Callable[..., OpLog]


def role(palace: Palace, user: Any) -> str | None:
    return Membership.objects.filter(palace=palace, user=user).values_list("role", flat=True).first()


def latest(op: str) -> OpLog:
    return OpLog.objects.filter(op=op).latest("pk")


# --- members -------------------------------------------------------------------------------------------------------


def test_a_role_change_is_set_back(project: Palace, alice: Any, bob: Any, revert_through_console: Revert) -> None:
    membership.member_role_change(palace_id=project.pk, username="bob", role="editor", actor=Actor.for_user(alice))
    assert role(project, bob) == "editor"
    revert = revert_through_console(latest("member.set"), "change_membership")
    assert role(project, bob) == "viewer"
    assert revert.detail["before"] == {"role": "editor"} and revert.detail["after"] == {"role": "viewer"}
    assert (revert.target_kind, revert.target_id, revert.palace_id) == ("user", bob.pk, project.pk)
    service_row = latest("member.set")  # the palace's own service made the change, with its own row
    assert service_row.detail["previous"] == "editor" and service_row.actor_user.get_username() == "keeper1"


def test_an_addition_is_taken_back_and_a_removal_added_back(
    project: Palace, alice: Any, charlie: Any, revert_through_console: Revert
) -> None:
    owner = Actor.for_user(alice)
    member_set(palace=project, user=charlie, role="editor", actor=owner)  # direct add: a member.set row
    revert_through_console(latest("member.set"), "change_membership", "invited by mistake")
    assert role(project, charlie) is None
    assert latest("member.remove").actor_user.get_username() == "keeper1"

    member_set(palace=project, user=charlie, role="viewer", actor=owner)  # direct add: a member.set row
    membership.member_remove_by(palace_id=project.pk, username="charlie", actor=owner)
    assert role(project, charlie) is None
    revert = revert_through_console(latest("member.remove"), "change_membership", "removed by mistake")
    assert role(project, charlie) == "viewer"  # back, with the role the removal recorded
    assert revert.detail["after"] == {"role": "viewer"}


def test_an_ownership_transfer_is_handed_back(
    project: Palace, alice: Any, bob: Any, revert_through_console: Revert
) -> None:
    membership.ownership_transfer(palace_id=project.pk, username="bob", actor=Actor.for_user(alice))
    assert (role(project, alice), role(project, bob)) == ("editor", "owner")
    revert = revert_through_console(latest("member.transfer"), "change_membership")
    assert (role(project, alice), role(project, bob)) == ("owner", "viewer")
    assert revert.detail["before"] == {"role": "owner"} and revert.detail["after"] == {"role": "viewer"}


# --- entities ------------------------------------------------------------------------------------------------------


def test_an_entity_rename_is_undone(alice: Any, alice_palace: Palace, revert_through_console: Revert) -> None:
    bob_e = make_entity(alice_palace, "Bob", aliases=["Bobby"])
    entity_rename(entity_id=bob_e.pk, name="Robert", actor=Actor.for_user(alice), reason="his full name")
    revert = revert_through_console(latest("entity.rename"), "change_entity")
    bob_e.refresh_from_db()
    assert (bob_e.name, bob_e.key) == ("Bob", "bob")
    assert sorted(bob_e.aliases) == ["Bobby", "Robert"]  # the later name stays an alias (the row cannot say)
    assert revert.detail["before"] == {"name": "Robert"} and revert.detail["after"] == {"name": "Bob"}
    assert latest("entity.rename").detail == {"from": "Robert", "to": "Bob"}  # the service's own row


def test_an_entity_merge_is_split_again(alice: Any, alice_palace: Palace, revert_through_console: Revert) -> None:
    shared, only_old, only_new = (make_memory(alice_palace, t) for t in ("both", "old only", "new only"))
    survivor = make_entity(alice_palace, "Caroline Smith", aliases=["Caro"], memories=[shared, only_new])
    merged = make_entity(alice_palace, "Carol", aliases=["CS"], memories=[shared, only_old])
    MemoryEntity.objects.filter(entity=merged, memory=only_old).update(source="agent")
    older = make_entity(alice_palace, "Carol S.")
    Entity.objects.filter(pk=older.pk).update(merged_into=merged)
    fact = Fact.objects.create(palace=alice_palace, entity=merged, content="Carol leads billing")

    def state() -> Any:
        links = sorted(
            MemoryEntity.objects.filter(entity__in=[survivor, merged]).values_list("entity", "memory", "source")
        )
        rows = {e.pk: (e.name, sorted(e.aliases), e.merged_into_id) for e in Entity.objects.filter(palace=alice_palace)}
        return links, rows, Fact.objects.get(pk=fact.pk).entity_id

    before = state()
    entity_merge(entity_id=merged.pk, into_id=survivor.pk, actor=Actor.for_user(alice), reason="same person")
    assert state() != before
    revert = revert_through_console(latest("entity.merge"), "change_entity")
    assert state() == before  # links with their sources, the dropped link, the fact, the redirected entity, aliases
    assert revert.detail["before"] == {"merged_into": survivor.pk} and revert.detail["after"] == {"merged_into": None}


# --- profile and handoff versions -----------------------------------------------------------------------------------


def test_a_profile_edit_is_reverted_by_a_new_version(
    alice: Any, project: Palace, revert_through_console: Revert
) -> None:
    owner = Actor.for_user(alice)
    curated_edit(palace=project, actor=owner, content="We deploy on Tuesdays.", expected_version=0)
    curated_edit(palace=project, actor=owner, content="We deploy whenever.", expected_version=1)
    revert = revert_through_console(latest("profile.edit"), "change_profileversion")
    assert curated_text(palace_id=project.pk) == "We deploy on Tuesdays."
    versions = list(ProfileVersion.objects.filter(palace=project).order_by("version").values_list("version", "content"))
    assert versions[-1] == (3, "We deploy on Tuesdays.") and len(versions) == 3  # appended; history kept
    assert (revert.target_kind, revert.detail["copied"]) == ("profile", 1)
    assert ProfileVersion.objects.get(version=3, palace=project).rolled_back_from == 1


def test_a_handoff_save_is_reverted_by_a_new_version(
    alice: Any, project: Palace, revert_through_console: Revert
) -> None:
    owner = Actor.for_user(alice)
    handoff_save(
        palace=project, actor=owner, data=HandoffInput(doing="migrating", next_steps=["run 0014"]), expected_version=0
    )
    handoff_save(palace=project, actor=owner, data=HandoffInput(doing="lost the thread"), expected_version=1)
    revert = revert_through_console(latest("handoff.save"), "change_handoffversion")
    current = handoff_current(palace_id=project.pk, actor=owner)
    assert current is not None
    assert (current.version, current.doing, current.next_steps, current.restored_from) == (
        3,
        "migrating",
        ["run 0014"],
        1,
    )
    assert current.user_id == alice.pk  # still alice's handoff, whoever reverted it
    assert revert.target_kind == "handoff" and revert.target_id == current.pk


# --- admin edits ---------------------------------------------------------------------------------------------------


def _admin_change(root: Client, url: str, form_id: str, edits: dict[str, Any]) -> None:
    data = form_data(root.get(url).content.decode(), form_id, edits)
    assert root.post(url, {**data, "reason": "tidying up"}).status_code == 302


def test_an_admin_edit_is_set_back_field_by_field(
    project: Palace, bob: Any, make_user: Callable[..., Any], revert_through_console: Revert
) -> None:
    root = Client()
    root.force_login(make_user("root", admin=True))
    _admin_change(root, f"/admin/palace/palace/{project.pk}/change/", "palace_form", {"name": "Demo (renamed)"})
    edit = latest("admin.change")
    assert Palace.objects.get(pk=project.pk).name == "Demo (renamed)"
    revert = revert_through_console(edit, "change_palace")
    assert Palace.objects.get(pk=project.pk).name == project.name
    assert revert.detail["before"] == {"name": "Demo (renamed)"} and revert.detail["after"] == {"name": project.name}
    assert (revert.target_kind, revert.target_id, revert.palace_id) == ("palace", project.pk, project.pk)


def test_an_admin_edit_of_a_users_groups_is_set_back(
    bob: Any, make_user: Callable[..., Any], revert_through_console: Revert
) -> None:
    readers, writers = Group.objects.create(name="readers"), Group.objects.create(name="writers")
    bob.groups.set([readers])
    root = Client()
    root.force_login(make_user("root", admin=True))
    _admin_change(root, f"/admin/auth/user/{bob.pk}/change/", "user_form", {"groups": [str(writers.pk)]})
    assert list(bob.groups.values_list("name", flat=True)) == ["writers"]
    revert_through_console(latest("admin.change"), "change_user")
    assert list(bob.groups.values_list("name", flat=True)) == ["readers"]


def test_the_console_says_per_row_why_a_row_cannot_be_reverted(
    project: Palace, alice: Any, staff_client: Callable[..., Client]
) -> None:
    membership.member_role_change(palace_id=project.pk, username="bob", role="editor", actor=Actor.for_user(alice))
    keeper = staff_client("keeper", "view_oplog", "restore_memory", "change_membership")
    page = keeper.get(CONSOLE).content.decode()
    assert revert_url(latest("member.set")) in page  # revertible: the link
    assert "not revertible: palaces are kept, never deleted" in page  # the project's creation: the reason
    assert "not revertible: users are kept, never deleted" in page
    restorer = staff_client("restorer", "view_oplog", "restore_memory")  # without the members' permission
    page = restorer.get(CONSOLE).content.decode()
    assert revert_url(latest("member.set")) not in page
    assert "not revertible: reverting member.set also needs the “palace.change_membership” permission" in page
    auditor = staff_client("auditor", "view_oplog")
    assert "not revertible" not in auditor.get(CONSOLE).content.decode()  # only restorers get the column
