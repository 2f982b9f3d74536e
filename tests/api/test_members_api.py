"""REST for projects and members: POST /palaces creates a project, /palaces/{id}/members invites, PATCH and DELETE
change and remove, /leave and /transfer — for every role, each refusal beside an allowed call."""

from __future__ import annotations

import json
from typing import Any

import pytest

from palace.models import Membership, OpLog, Palace

JSON = "application/json"


def _roles(palace: Palace) -> dict[str, str]:
    """Accepted members by name (an invitation waiting for an answer is no membership)."""
    rows = Membership.objects.filter(palace=palace, state=Membership.State.ACCEPTED)
    return dict(rows.values_list("user__username", "role"))


def _post(client: Any, url: str, body: dict[str, Any] | None = None, **extra: Any) -> Any:
    return client.post(url, json.dumps(body or {}), content_type=JSON, **extra)


def test_create_a_project_by_session_and_token(
    alice: Any, client_for: Any, client: Any, token_for: Any, bearer: Any
) -> None:
    made = _post(client_for(alice), "/api/v1/palaces", {"origin": "git@github.com:team/app.git", "name": "App"})
    assert made.status_code == 201, made.content
    assert made.json()["origin"] == "github.com/team/app" and made.json()["role"] == "owner"
    palace = Palace.objects.get(pk=made.json()["id"])
    assert _roles(palace) == {"alice": "owner"}
    assert OpLog.objects.filter(op="palace.create", palace=palace, actor_user=alice).exists()
    again = _post(client_for(alice), "/api/v1/palaces", {"origin": "https://github.com/team/app"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
    bad = _post(client_for(alice), "/api/v1/palaces", {"origin": "not a url"})
    assert bad.status_code == 422 and bad.json()["error"]["message"]
    by_token = _post(client, "/api/v1/palaces", {"origin": "https://github.com/team/other"}, **bearer(token_for(alice)))
    assert by_token.status_code == 201
    read_only = _post(
        client, "/api/v1/palaces", {"origin": "https://github.com/team/third"}, **bearer(token_for(alice, "read"))
    )
    assert read_only.status_code == 403 and not Palace.objects.filter(origin_key="github.com/team/third").exists()


def test_owner_manages_members_over_rest(project: Palace, alice: Any, charlie: Any, client_for: Any) -> None:
    owner = client_for(alice)
    base = f"/api/v1/palaces/{project.pk}/members"
    invited = _post(owner, base, {"username": "charlie", "role": "viewer"})
    assert invited.status_code == 201 and invited.json() == {
        "username": "charlie",
        "role": "viewer",
        "state": "pending",
    }
    # Since issue 24 the invitation waits for charlie's consent: accepted through his own door.
    assert _post(client_for(charlie), f"/api/v1/palaces/{project.pk}/accept").status_code == 200
    changed = owner.patch(f"{base}/charlie", json.dumps({"role": "editor"}), content_type=JSON)
    assert changed.status_code == 200 and changed.json()["role"] == "editor"
    bad_role = owner.patch(f"{base}/charlie", json.dumps({"role": "king"}), content_type=JSON)
    assert bad_role.status_code == 422
    assert _roles(project) == {"alice": "owner", "bob": "viewer", "charlie": "editor"}
    assert owner.delete(f"{base}/charlie").status_code == 204
    assert owner.delete(f"{base}/charlie").status_code == 404
    ops = OpLog.objects.filter(palace=project, target_id=charlie.pk).order_by("pk")
    assert list(ops.values_list("op", flat=True)) == [
        "member.accept",
        "member.set",
        "member.remove",
    ]


def test_last_owner_is_kept_and_transfer_then_leave(project: Palace, alice: Any, bob: Any, client_for: Any) -> None:
    owner = client_for(alice)
    base = f"/api/v1/palaces/{project.pk}"
    demote = owner.patch(f"{base}/members/alice", json.dumps({"role": "viewer"}), content_type=JSON)
    remove = owner.delete(f"{base}/members/alice")
    leave = _post(owner, f"{base}/leave")
    for refused in (demote, remove, leave):
        assert refused.status_code == 409
        assert "always keeps an owner" in refused.json()["error"]["message"]
    moved = _post(owner, f"{base}/transfer", {"username": "bob"})
    assert moved.status_code == 200
    assert moved.json() == [{"username": "alice", "role": "editor"}, {"username": "bob", "role": "owner"}]
    assert _post(owner, f"{base}/leave").status_code == 204
    assert _roles(project) == {"bob": "owner"}
    assert _post(owner, f"{base}/leave").status_code == 404  # no longer hers: like a missing project


@pytest.mark.parametrize("role", ["editor", "viewer"])
def test_members_who_are_not_owners_get_403_outsiders_404(
    project: Palace, alice: Any, bob: Any, charlie: Any, client_for: Any, role: str
) -> None:
    Membership.objects.filter(palace=project, user=bob).update(role=role)
    base = f"/api/v1/palaces/{project.pk}"
    member, outsider = client_for(bob), client_for(charlie)
    calls = [
        lambda c: _post(c, f"{base}/members", {"username": "charlie", "role": "viewer"}),
        lambda c: c.patch(f"{base}/members/alice", json.dumps({"role": "viewer"}), content_type=JSON),
        lambda c: c.delete(f"{base}/members/alice"),
        lambda c: _post(c, f"{base}/transfer", {"username": "bob"}),
    ]
    for call in calls:
        refused = call(member)
        assert refused.status_code == 403, refused.content
        assert refused.json()["error"]["message"] == "only an owner of this project can manage its members"
        hidden, missing = (
            call(outsider),
            _post(outsider, "/api/v1/palaces/999999/members", {"username": "x", "role": "viewer"}),
        )
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json()["error"]["code"] == missing.json()["error"]["code"] == "not_found"
        assert hidden.json()["error"]["message"] == missing.json()["error"]["message"]  # no existence oracle
    assert _post(outsider, f"{base}/leave").status_code == 404
    assert _roles(project) == {"alice": "owner", "bob": role}
    # positive controls: the member may leave, the owner may invite
    assert _post(member, f"{base}/leave").status_code == 204
    assert _post(client_for(alice), f"{base}/members", {"username": "charlie", "role": "viewer"}).status_code == 201
    assert _roles(project) == {"alice": "owner"}  # invited, not yet a member
    assert _post(outsider, f"{base}/accept").status_code == 200
    assert _roles(project) == {"alice": "owner", "charlie": "viewer"}
