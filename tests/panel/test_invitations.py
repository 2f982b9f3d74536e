"""Issue 24, Medium 8 through the panel (Django test client) and the operator's CLI: an owner's invite form makes a
pending invitation that the invitee sees on their Projects page with Accept and Decline, and that grants nothing
until accepted; `atrium project add-member` and `project create --member` still add members at once."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command

from palace import selectors
from palace.models import Membership, OpLog, Palace


def test_invite_accept_and_decline_in_the_panel(
    project: Palace, alice: Any, charlie: Any, make_user: Any, client_for: Any
) -> None:
    dora = make_user("dora")
    owner, url = client_for(alice), f"/projects/{project.pk}/"
    for name in ("charlie", "dora"):
        assert owner.post(f"{url}invite/", {"username": name, "role": "editor"}).status_code == 302
    invitee = client_for(charlie)
    listing = invitee.get("/projects/").content.decode()
    assert 'id="invitations"' in listing and f'data-palace="{project.pk}"' in listing
    assert f'action="{url}accept/"' in listing and f'action="{url}decline/"' in listing
    assert 'id="invitations"' not in owner.get("/projects/").content.decode()  # control: alice has none
    assert f'href="{url}"' not in listing  # not among his projects, not in the scope picker
    assert invitee.get(url).status_code == 404 and owner.get(url).status_code == 200
    assert "charlie" not in owner.get(url).content.decode()  # the invitation is not shown to the project

    accepted = invitee.post(f"{url}accept/")
    assert accepted.status_code == 302 and accepted["Location"] == url
    assert Membership.objects.get(palace=project, user=charlie).state == "accepted"
    assert invitee.get(url).status_code == 200 and f'href="{url}"' in invitee.get("/projects/").content.decode()
    assert invitee.post(f"{url}accept/").status_code == 404  # nothing waits any more

    declined = client_for(dora).post(f"{url}decline/")
    assert declined.status_code == 302 and declined["Location"] == "/projects/"
    assert not Membership.objects.filter(palace=project, user=dora).exists()
    assert client_for(dora).get(url).status_code == 404
    assert OpLog.objects.filter(op="member.decline", actor_user=dora, palace__isnull=True).exists()


def test_the_operators_cli_adds_members_at_once(alice: Any, bob: Any, charlie: Any, client_for: Any) -> None:
    call_command("project", "create", "git@github.com:team/app.git", "--owner", "alice", "--member", "bob:viewer")
    palace = Palace.objects.get(origin_key="github.com/team/app")
    assert Membership.objects.get(palace=palace, user=bob).state == "accepted"
    assert selectors.palace_get(user=bob, palace_id=palace.pk) == palace
    # an invitation waiting for charlie: the operator's add-member makes it a membership at once
    client_for(alice).post(f"/projects/{palace.pk}/invite/", {"username": "charlie", "role": "viewer"})
    assert client_for(charlie).get(f"/projects/{palace.pk}/").status_code == 404
    call_command("project", "add-member", "https://github.com/team/app", "charlie:editor")
    assert Membership.objects.get(palace=palace, user=charlie).state == "accepted"
    assert client_for(charlie).get(f"/projects/{palace.pk}/").status_code == 200
    row = OpLog.objects.filter(op="member.set", palace=palace, target_id=charlie.pk).get()
    assert row.actor_kind == "system" and row.actor_name == "atrium project"
    assert row.detail["role"] == "editor" and row.detail["previous"] is None
