"""The Projects pages: the list with its create form, a project's members with the owner's forms; every role, each
refusal beside an allowed action, and the header's scope switcher picking up a new project at once."""

from __future__ import annotations

from typing import Any

import pytest

from palace.models import Membership, OpLog, Palace


def _roles(palace: Palace) -> dict[str, str]:
    """Accepted members by name (an invitation waiting for an answer is no membership)."""
    rows = Membership.objects.filter(palace=palace, state=Membership.State.ACCEPTED)
    return dict(rows.values_list("user__username", "role"))


def test_create_a_project_and_the_scope_switcher_shows_it(alice: Any, client_for: Any) -> None:
    owner = client_for(alice)
    listing = owner.get("/projects/")
    assert listing.status_code == 200 and 'href="/projects/"' in listing.content.decode()  # linked from the nav
    assert 'id="scope-project"' not in listing.content.decode()  # no project yet: no picker
    made = owner.post("/projects/create/", {"origin": "git@github.com:team/app.git", "name": ""})
    palace = Palace.objects.get(origin_key="github.com/team/app")
    assert made.status_code == 302 and made["Location"] == f"/projects/{palace.pk}/"
    assert _roles(palace) == {"alice": "owner"}
    assert OpLog.objects.filter(op="palace.create", palace=palace, actor_user=alice).exists()
    page = owner.get(made["Location"]).content.decode()
    assert 'id="scope-project"' in page and f'<option value="{palace.pk}" selected>github.com/team/app' in page
    again = owner.post("/projects/create/", {"origin": "https://github.com/team/app"})
    assert again.status_code == 409 and "already exists" in again.content.decode()
    bad = owner.post("/projects/create/", {"origin": "nonsense"})
    assert bad.status_code == 422 and "not a git origin" in bad.content.decode()


def test_owner_invites_changes_transfers_and_leaves(
    project: Palace, alice: Any, bob: Any, charlie: Any, client_for: Any
) -> None:
    owner, url = client_for(alice), f"/projects/{project.pk}/"
    page = owner.get(url).content.decode()
    assert 'id="invite"' in page and 'id="transfer"' in page
    assert owner.post(f"{url}invite/", {"username": "charlie", "role": "viewer"}).status_code == 302
    # Since issue 24 the invitation waits for charlie's consent, given on his Projects page.
    assert client_for(charlie).post(f"{url}accept/").status_code == 302
    assert owner.post(f"{url}role/", {"username": "charlie", "role": "editor"}).status_code == 302
    assert owner.post(f"{url}remove/", {"username": "charlie"}).status_code == 302
    assert _roles(project) == {"alice": "owner", "bob": "viewer"}
    last = owner.post(f"{url}leave/")
    assert last.status_code == 409 and "always keeps an owner" in last.content.decode()
    unknown = owner.post(f"{url}invite/", {"username": "nobody", "role": "viewer"})
    assert unknown.status_code == 302 and unknown["Location"] == url  # like any invitation: no existence oracle
    assert owner.post(f"{url}transfer/", {"username": "bob"}).status_code == 302
    assert _roles(project) == {"alice": "editor", "bob": "owner"}
    left = owner.post(f"{url}leave/")
    assert left.status_code == 302 and left["Location"] == "/projects/"
    assert _roles(project) == {"bob": "owner"}
    ops = OpLog.objects.filter(palace=project, actor_user=alice, op__startswith="member.").order_by("pk")
    assert list(ops.values_list("op", flat=True)) == [
        "member.invite",
        "member.set",
        "member.remove",
        "member.invite",
        "member.transfer",
        "member.leave",
    ]
    assert owner.get(url).status_code == 404


@pytest.mark.parametrize("role", ["editor", "viewer"])
def test_non_owners_see_members_but_get_403_and_outsiders_404(
    project: Palace, alice: Any, bob: Any, charlie: Any, client_for: Any, role: str
) -> None:
    Membership.objects.filter(palace=project, user=bob).update(role=role)
    member, outsider, url = client_for(bob), client_for(charlie), f"/projects/{project.pk}/"
    page = member.get(url)
    assert page.status_code == 200 and "alice" in page.content.decode()
    assert 'id="invite"' not in page.content.decode() and 'id="leave"' in page.content.decode()
    for action, data in [
        ("invite", {"username": "charlie", "role": "viewer"}),
        ("role", {"username": "alice", "role": "viewer"}),
        ("remove", {"username": "alice"}),
        ("transfer", {"username": "bob"}),
    ]:
        refused = member.post(f"{url}{action}/", data)
        assert refused.status_code == 403 and "only an owner" in refused.content.decode()
        assert outsider.post(f"{url}{action}/", data).status_code == 404
    assert outsider.get(url).status_code == outsider.get("/projects/999999/").status_code == 404
    assert "github.com/atrium-test/demo" not in outsider.get("/projects/").content.decode()
    assert _roles(project) == {"alice": "owner", "bob": role}
    # positive controls: the member leaves, the owner invites
    assert member.post(f"{url}leave/").status_code == 302
    assert client_for(alice).post(f"{url}invite/", {"username": "charlie", "role": "viewer"}).status_code == 302
    assert _roles(project) == {"alice": "owner"}  # invited, not yet a member
    assert outsider.post(f"{url}accept/").status_code == 302
    assert _roles(project) == {"alice": "owner", "charlie": "viewer"}


def test_a_personal_palace_is_not_a_project_page(alice: Any, client_for: Any) -> None:
    personal = Palace.objects.get(personal_owner=alice)
    owner = client_for(alice)
    assert owner.get("/projects/").status_code == 200
    assert owner.get(f"/projects/{personal.pk}/").status_code == 404
    assert owner.post(f"/projects/{personal.pk}/nonsense/").status_code == 404
