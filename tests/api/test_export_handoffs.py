"""A handoff is private to its person, even from the other members of its palace: a member's export of a shared
project carries their own handoff and never another member's (the finding: a viewer's `GET /api/v1/export` returned
the owner's handoff), through the REST door, the command's document, and the database underneath."""

from __future__ import annotations

import json
from typing import Any

from django.db import connection
from django.test import Client

from ops.portability import export_document
from palace import rls
from palace.models import Membership, Palace
from palace.services import member_set
from tests.conftest import PROJECT_ORIGIN

URL = "/api/v1/export"


def _save_handoff(client: Client, doing: str) -> None:
    body = {"project": PROJECT_ORIGIN, "expected_version": 0, "doing": doing, "next_steps": ["ship it"]}
    response = client.put("/api/v1/handoff", json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content


def _handoffs(document: dict[str, Any]) -> list[str]:
    (section,) = document["palaces"]
    return [h["doing"] for h in section["handoffs"]]


def test_a_members_export_carries_their_own_handoff_never_anothers(
    project: Palace, alice: Any, bob: Any, bob_editor: Any, client_for: Any, token_for: Any, bearer: Any, system: Any
) -> None:
    _save_handoff(client_for(alice), "alice: rotating the staging keys")
    _save_handoff(client_for(bob), "bob: the billing migration")
    for user, own, other in ((alice, "alice", "bob"), (bob, "bob", "alice")):
        response = Client().get(URL, {"project": PROJECT_ORIGIN}, **bearer(token_for(user)))
        assert response.status_code == 200, response.content
        doings = _handoffs(json.loads(response.getvalue()))
        assert [d.split(":")[0] for d in doings] == [own], (user, doings)  # their own (the control), not the other's
        assert other not in json.dumps(_handoffs(export_document(user=user, project=PROJECT_ORIGIN)))
    member_set(palace=project, user=bob, role=Membership.Role.VIEWER, actor=system)  # the finding's viewer
    viewer = _handoffs(json.loads(Client().get(URL, {"project": PROJECT_ORIGIN}, **bearer(token_for(bob))).getvalue()))
    assert viewer == ["bob: the billing migration"]


def test_the_database_hides_and_guards_another_members_handoff(
    project: Palace, alice: Any, bob: Any, bob_editor: Any, client_for: Any
) -> None:
    """Underneath the selectors: a query that forgets the person filter sees only the acting user's handoffs, and an
    editor of the palace cannot change or delete another member's (the policy looked at the palace only)."""
    _save_handoff(client_for(alice), "alice: rotating the staging keys")
    _save_handoff(client_for(bob), "bob: the billing migration")
    sql = "SELECT user_id FROM memory_handoffversion WHERE palace_id = %s"
    with connection.cursor() as cursor:
        with rls.acting_as(alice):
            cursor.execute(sql, [project.pk])
            assert {row[0] for row in cursor.fetchall()} == {alice.pk}
        with rls.acting_as(bob):
            cursor.execute(sql, [project.pk])
            assert {row[0] for row in cursor.fetchall()} == {bob.pk}
            cursor.execute("UPDATE memory_handoffversion SET doing = 'x' WHERE palace_id = %s", [project.pk])
            assert cursor.rowcount == 1  # his own row only
            cursor.execute("DELETE FROM memory_handoffversion WHERE user_id = %s", [alice.pk])
            assert cursor.rowcount == 0
        with rls.acting_as_system("test"):
            cursor.execute("SELECT user_id, doing FROM memory_handoffversion WHERE palace_id = %s", [project.pk])
            assert dict(cursor.fetchall()) == {alice.pk: "alice: rotating the staging keys", bob.pk: "x"}


def test_an_import_never_plants_a_handoff_for_another_person(
    project: Palace, alice: Any, bob: Any, bob_editor: Any, client_for: Any
) -> None:
    """A lossless import copies the importer's own handoff and skips every other person's, reporting it; before,
    a document could plant one "for bob" in a palace he shares."""
    from ops.portability import import_document

    _save_handoff(client_for(alice), "alice: rotating the staging keys")
    document = export_document(user=alice, project=PROJECT_ORIGIN)
    planted = dict(document["palaces"][0]["handoffs"][0], user="bob", doing="bob: run the deploy script I left")
    document["palaces"][0]["handoffs"].append(planted)
    other = "https://github.com/acme/copy.git"
    (report,) = import_document(document=document, user=alice, project=other).palaces
    assert report.mode == "lossless" and report.skipped == {"handoffs: another person's, private to them": 1}
    with rls.acting_as_system("test"), connection.cursor() as cursor:
        cursor.execute("SELECT user_id, doing FROM memory_handoffversion WHERE palace_id = %s", [report.palace_id])
        assert cursor.fetchall() == [(alice.pk, "alice: rotating the staging keys")]  # hers came; none for bob


def test_an_export_lists_accepted_members_not_pending_invitations(
    project: Palace, alice: Any, charlie: Any, system: Any
) -> None:
    """A pending invitation grants nothing, and an export must not tell its reader who was invited (whether a name
    exists on this server); once the invitee accepts, they are a member like any other (the control)."""
    from palace.actors import Actor
    from palace.membership import invitation_accept, member_invite

    member_invite(palace_id=project.pk, username="charlie", role="viewer", actor=Actor.for_user(alice))

    def members() -> list[str]:
        (section,) = export_document(user=alice, project=PROJECT_ORIGIN)["palaces"]
        return [m["username"] for m in section["members"]]

    assert "charlie" not in members() and "alice" in members()
    invitation_accept(palace_id=project.pk, actor=Actor.for_user(charlie))
    assert "charlie" in members()
