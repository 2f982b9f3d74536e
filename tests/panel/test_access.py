"""Every panel view and htmx endpoint resolves palaces through palace.selectors: an outsider gets 404 (with a
positive control in the same test), a viewer sees no write controls and a forged viewer POST is refused."""

from __future__ import annotations

import pytest

from memory.models import Memory


def to_project(client, project):
    assert client.post("/scope/", {"mode": "project", "project": project.pk, "next": "/palace/"}).status_code == 302


@pytest.mark.parametrize(
    "url",
    [
        "/palace/m/{m}/",
        "/episodes/{m}/nearby/",
        "/corridor/m/{m}/neighbours/",
        "/corridor/room/{room}/",
        "/corridor/rooms/?palace={palace}&kind=episode",
    ],
)
def test_outsider_gets_404_for_a_project_memory(url, alice, charlie, project, client_for, make_memory):
    memory = make_memory(project, "The staging database is db-7", kind="episode")
    target = url.format(m=memory.pk, room=memory.slot.room_id, palace=memory.palace_id)
    assert client_for(charlie).get(target).status_code == 404
    assert client_for(charlie).get(target, HTTP_HX_REQUEST="true").status_code == 404
    assert client_for(alice).get(target).status_code == 200  # positive control


# Each write action from the state where it does something, and the stored status after the owner posts it.
ACTIONS = {"forget": ("active", "forgotten"), "restore": ("forgotten", "active"), "edit": ("active", "superseded")}
POSTED = {"content": "Use yarn, not pnpm or npm", "version": 1, "placard": "", "reason": "checked"}


def owner_post_changes_it(client, memory, action):
    """The positive control: the very POST that was refused does change the memory when its owner sends it."""
    assert client.post(f"/palace/m/{memory.pk}/{action}/", POSTED).status_code == 302
    memory.refresh_from_db()
    assert memory.status == ACTIONS[action][1]
    if action == "edit":
        assert Memory.objects.get(supersedes=memory).content == POSTED["content"]


@pytest.mark.parametrize("action", ACTIONS)
def test_outsider_post_is_404_and_changes_nothing(action, alice, charlie, project, client_for, make_memory):
    memory = make_memory(project, "Use pnpm, not npm", kind="decision", status=ACTIONS[action][0])
    assert client_for(charlie).post(f"/palace/m/{memory.pk}/{action}/", POSTED).status_code == 404
    memory.refresh_from_db()
    assert memory.status == ACTIONS[action][0] and memory.content == "Use pnpm, not npm"
    assert Memory.objects.filter(palace=project).count() == 1
    owner_post_changes_it(client_for(alice), memory, action)


def test_viewer_sees_no_write_controls(alice, bob, project, client_for, make_memory):
    make_memory(project, "Releases are cut on Tuesdays", kind="decision")
    viewer = client_for(bob)
    to_project(viewer, project)
    page = viewer.get("/palace/").content.decode()
    assert "Releases are cut on Tuesdays" in page
    assert 'id="batch"' not in page and "/forget/" not in page and 'name="ids"' not in page
    owner = client_for(alice)
    to_project(owner, project)
    page = owner.get("/palace/").content.decode()
    assert 'id="batch"' in page and "/forget/" in page  # positive control


def test_viewer_detail_has_no_edit_form(alice, bob, project, client_for, make_memory):
    memory = make_memory(project, "Releases are cut on Tuesdays", kind="decision")
    assert "Save correction" not in client_for(bob).get(f"/palace/m/{memory.pk}/").content.decode()
    assert "Save correction" in client_for(alice).get(f"/palace/m/{memory.pk}/").content.decode()


@pytest.mark.parametrize("action", ACTIONS)
def test_forged_viewer_post_is_refused(action, alice, bob, project, client_for, make_memory):
    memory = make_memory(project, "Use pnpm, not npm", kind="decision", status=ACTIONS[action][0])
    response = client_for(bob).post(f"/palace/m/{memory.pk}/{action}/", POSTED)
    assert response.status_code == 403
    memory.refresh_from_db()
    assert memory.status == ACTIONS[action][0] and memory.content == "Use pnpm, not npm"
    assert Memory.objects.filter(palace=project).count() == 1
    owner_post_changes_it(client_for(alice), memory, action)


def test_forged_viewer_batch_and_grade_are_refused(alice, bob, project, client_for, make_memory):
    from palace.models import OpLog

    memory = make_memory(project, "Use pnpm, not npm", kind="decision")
    viewer, owner = client_for(bob), client_for(alice)
    assert viewer.post("/palace/batch/", {"action": "forget", "ids": [memory.pk]}).status_code == 403
    assert viewer.post(f"/review/{memory.pk}/grade/", {"grade": "remembered"}).status_code == 403
    memory.refresh_from_db()
    assert memory.status == "active"
    assert not OpLog.objects.filter(op__startswith="review.", target_id=memory.pk).exists()
    # The positive controls: the owner's same posts grade it and forget it.
    assert owner.post(f"/review/{memory.pk}/grade/", {"grade": "remembered"}).status_code == 302
    assert OpLog.objects.filter(op__startswith="review.", target_id=memory.pk, actor_user=alice).exists()
    assert owner.post("/palace/batch/", {"action": "forget", "ids": [memory.pk]}).status_code == 302
    memory.refresh_from_db()
    assert memory.status == "forgotten"


def test_anonymous_is_sent_to_login(client, db):
    for url in ["/today/", "/palace/", "/corridor/", "/log/", "/episodes/"]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert client.get("/").status_code == 302


def test_project_picker_lists_only_the_users_projects(alice, bob, charlie, project, client_for):
    assert "atrium-test/demo" in client_for(bob).get("/today/").content.decode()  # a member (viewer) sees it
    outsider = client_for(charlie).get("/today/").content.decode()
    assert "atrium-test/demo" not in outsider and 'name="mode" value="project"' not in outsider


def test_viewer_can_reveal_but_not_grade(alice, bob, project, client_for, make_memory):
    from datetime import timedelta

    from django.utils import timezone

    memory = make_memory(project, "Releases are cut on Tuesdays", kind="decision", placard="release day")
    Memory.objects.filter(pk=memory.pk).update(review_enrolled=True, created_at=timezone.now() - timedelta(days=2))
    viewer, owner = client_for(bob), client_for(alice)
    to_project(viewer, project)
    to_project(owner, project)
    assert "release day" in viewer.get("/today/").content.decode()
    revealed = viewer.post(f"/review/{memory.pk}/reveal/", HTTP_HX_REQUEST="true").content.decode()
    assert "Releases are cut on Tuesdays" in revealed and "Remembered" not in revealed
    assert "Remembered" in owner.post(f"/review/{memory.pk}/reveal/", HTTP_HX_REQUEST="true").content.decode()
