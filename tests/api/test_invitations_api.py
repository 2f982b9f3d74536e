"""Issue 24, Medium 8 and the Low existence oracle, through REST with bearer tokens: an owner's invitation is a
pending membership that grants nothing (no read, no search, not in the palace list, not in row-level security's
palaces) until the invitee accepts; declining removes it; the inviter cannot tell an unknown name from one who has
not answered; a non-member gets the same 404 as for a missing project. Each negative beside its positive control."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory.models import Memory
from palace.models import Membership, OpLog, Palace
from palace.rls import acting_as
from tests.api.conftest import Api
from tests.fakes.memories import remember

ORIGIN = "https://github.com/team/secret"
SECRET = "The secret launch codename is Bluebird and it ships in March"


def _project(owner: Api) -> tuple[Palace, Memory]:
    status, made = owner.post("/api/v1/palaces", {"origin": ORIGIN})
    assert status == 201, made
    palace = Palace.objects.get(pk=made["id"])
    return palace, remember(palace, SECRET)


def _sees(api: Api, palace: Palace, memory: Memory) -> dict[str, bool]:
    """Every read the invitee might try, each True when it shows the project or its memory."""
    listed = api.get("/api/v1/palaces")[1]
    found = api.get("/api/v1/search", query="launch codename Bluebird")[1]
    return {
        "palace list": palace.pk in [p["id"] for p in listed],
        "search": memory.pk in [h["memory"]["id"] for h in found["hits"]],
        "search in palace": api.get("/api/v1/search", query="Bluebird", palace=palace.pk)[0] == 200,
        "memory": api.get(f"/api/v1/memories/{memory.pk}")[0] == 200,
        "memory list": api.get("/api/v1/memories", project=ORIGIN)[0] == 200,
        "members": api.get(f"/api/v1/palaces/{palace.pk}/members")[0] == 200,
        "rooms": api.get(f"/api/v1/palaces/{palace.pk}/rooms")[0] == 200,
        "profile": api.get("/api/v1/profile.txt", project=ORIGIN)[0] == 200,
    }


def _rls_reads(user: Any, palace: Palace) -> bool:
    # Row-level security's own answer (palace 0005's atrium_readable_palaces), below every selector.
    with acting_as(user):
        return Memory.objects.filter(palace=palace).exists()


def test_an_invitation_grants_nothing_until_the_invitee_accepts(
    alice: Any, bob: Any, api_for: Callable[..., Api]
) -> None:
    owner, invitee = api_for(alice), api_for(bob)
    palace, memory = _project(owner)
    status, body = owner.post(f"/api/v1/palaces/{palace.pk}/members", {"username": "bob", "role": "editor"})
    assert status == 201 and body == {"username": "bob", "role": "editor", "state": "pending"}
    assert Membership.objects.get(palace=palace, user=bob).state == "pending"

    assert _sees(owner, palace, memory) == dict.fromkeys(_sees(owner, palace, memory), True)  # positive control
    assert _sees(invitee, palace, memory) == dict.fromkeys(_sees(owner, palace, memory), False)
    assert _rls_reads(alice, palace) and not _rls_reads(bob, palace)
    write = invitee.post("/api/v1/memories", {"content": "bob was here", "kind": "fact", "palace": palace.pk})
    assert write[0] == 404 and not Memory.objects.filter(palace=palace, content="bob was here").exists()
    assert [(i["id"], i["role"], i["origin"]) for i in invitee.get("/api/v1/palaces/invitations")[1]] == [
        (palace.pk, "editor", "github.com/team/secret")
    ]
    assert owner.get("/api/v1/palaces/invitations")[1] == []
    # the project's members list does not show the invitation (nobody's consent is announced before it is given)
    assert [m["username"] for m in owner.get(f"/api/v1/palaces/{palace.pk}/members")[1]] == ["alice"]

    status, body = invitee.post(f"/api/v1/palaces/{palace.pk}/accept")
    assert status == 200 and body["id"] == palace.pk and body["role"] == "editor"
    assert Membership.objects.get(palace=palace, user=bob).state == "accepted"
    assert _sees(invitee, palace, memory) == dict.fromkeys(_sees(owner, palace, memory), True)
    assert _rls_reads(bob, palace)
    assert invitee.get("/api/v1/palaces/invitations")[1] == []
    assert invitee.post(f"/api/v1/palaces/{palace.pk}/accept")[0] == 404  # nothing waits any more
    ops = OpLog.objects.filter(palace=palace, op__in=["member.invite", "member.accept"]).order_by("pk")
    assert [(o.op, o.actor_user_id, o.target_id) for o in ops] == [
        ("member.invite", alice.pk, None),
        ("member.accept", bob.pk, bob.pk),
    ]


def test_decline_removes_the_invitation_and_tells_the_project_nothing(
    alice: Any, bob: Any, charlie: Any, api_for: Callable[..., Api]
) -> None:
    owner, invitee, stranger = api_for(alice), api_for(bob), api_for(charlie)
    palace, memory = _project(owner)
    owner.post(f"/api/v1/palaces/{palace.pk}/members", {"username": "bob", "role": "viewer"})
    owner.post(f"/api/v1/palaces/{palace.pk}/members", {"username": "charlie", "role": "viewer"})
    assert invitee.client.post(f"/api/v1/palaces/{palace.pk}/decline").status_code == 204
    assert not Membership.objects.filter(palace=palace, user=bob).exists()
    assert Membership.objects.filter(palace=palace, user=charlie, state="pending").exists()  # control: charlie's waits
    assert invitee.post(f"/api/v1/palaces/{palace.pk}/accept")[0] == 404  # declined is gone, not pending
    assert not _sees(invitee, palace, memory)["search"]
    declined = OpLog.objects.get(op="member.decline", actor_user=bob)
    assert declined.palace_id is None and declined.target_id == palace.pk
    assert "member.decline" not in [r["op"] for r in owner.get("/api/v1/oplog")[1]["items"]]
    assert "member.decline" in [r["op"] for r in invitee.get("/api/v1/oplog")[1]["items"]]
    # the stranger's accept of a real project and of a missing one read the same
    assert stranger.post(f"/api/v1/palaces/{palace.pk}/accept")[0] == 200  # control: charlie was invited
    a = api_for(bob).post(f"/api/v1/palaces/{palace.pk}/decline")
    b = api_for(bob).post("/api/v1/palaces/999999/decline")
    assert a == b and a[0] == 404


def test_the_inviter_cannot_tell_an_unknown_name_from_an_unanswered_invitation(
    alice: Any, bob: Any, api_for: Callable[..., Api]
) -> None:
    owner = api_for(alice)
    palace, _ = _project(owner)
    url = f"/api/v1/palaces/{palace.pk}/members"
    real = owner.post(url, {"username": "bob", "role": "viewer"})
    ghost = owner.post(url, {"username": "nobody-here", "role": "viewer"})
    assert real[0] == ghost[0] == 201
    assert {**real[1], "username": "?"} == {**ghost[1], "username": "?"}
    again = (
        owner.post(url, {"username": "bob", "role": "viewer"}),
        owner.post(url, {"username": "nobody-here", "role": "viewer"}),
    )
    assert again[0][0] == again[1][0] == 201
    assert owner.get(url)[1] == [{"username": "alice", "role": "owner"}]  # neither is listed
    rows = OpLog.objects.filter(palace=palace, op="member.invite").order_by("pk")
    assert [(r.target_kind, r.target_id, r.detail["user"]) for r in rows] == [
        ("invitation", None, "bob"),
        ("invitation", None, "nobody-here"),
        ("invitation", None, "bob"),
        ("invitation", None, "nobody-here"),
    ]
    assert Membership.objects.filter(palace=palace).count() == 2  # alice and bob's one pending row, nothing for ghost
    # control: an accepted member is a 409 (the members list shows them), so the equal answers above mean something
    api_for(bob).post(f"/api/v1/palaces/{palace.pk}/accept")
    assert owner.post(url, {"username": "bob", "role": "viewer"})[0] == 409


def test_accepting_needs_a_write_token(alice: Any, bob: Any, api_for: Callable[..., Api]) -> None:
    palace, _ = _project(api_for(alice))
    api_for(alice).post(f"/api/v1/palaces/{palace.pk}/members", {"username": "bob", "role": "viewer"})
    assert api_for(bob, "read").post(f"/api/v1/palaces/{palace.pk}/accept")[0] == 403
    assert Membership.objects.get(palace=palace, user=bob).state == "pending"
    assert api_for(bob).post(f"/api/v1/palaces/{palace.pk}/accept")[0] == 200


def test_a_non_member_gets_the_answer_of_a_missing_project(
    project: Palace, alice: Any, charlie: Any, api_for: Callable[..., Api]
) -> None:
    outsider, member = api_for(charlie), api_for(alice)
    for path, params in [
        (f"/api/v1/palaces/{project.pk}/members", {}),
        (f"/api/v1/palaces/{project.pk}/rooms", {}),
        ("/api/v1/search", {"query": "anything", "palace": project.pk}),
        ("/api/v1/memories", {"palace": project.pk}),
    ]:
        assert member.get(path, **params)[0] == 200  # positive control
        hidden = outsider.get(path, **params)
        missing = outsider.get(
            path.replace(str(project.pk), "999999"), **{k: (999999 if k == "palace" else v) for k, v in params.items()}
        )
        assert hidden == missing and hidden[0] == 404, (path, hidden, missing)
    hidden = outsider.get("/api/v1/memories", project="github.com/atrium-test/demo")
    missing = outsider.get("/api/v1/memories", project="github.com/atrium-test/nothing")
    assert hidden[0] == missing[0] == 404
    assert hidden[1]["error"]["message"].replace("demo", "X") == missing[1]["error"]["message"].replace("nothing", "X")
