"""Issue 24 (low) at the MCP door (official client): with ATRIUM_PROJECT_APPROVAL, a person who asked for a new
project gets a tool error naming `project` that says it awaits an operator's approval (another person gets the usual
"project not found"); once an operator approves the request in the admin, the requester saves and finds memories
there (positive control)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import Permission
from django.test import Client

from memory.models import Memory
from palace.models import Membership, OpLog, Palace, ProjectRequest
from tests.api.mcp.conftest import call_each, run, text_of

NEW = "https://github.com/team/fresh"
NEW_KEY = "github.com/team/fresh"
CHANGELIST = "/admin/palace/projectrequest/"
FACT = "The fresh service deploys from the main branch."


def _save_and_search(token: str) -> list[Any]:
    return run(
        call_each(
            token,
            [
                ("memory_save", {"content": FACT, "kind": "fact", "project": NEW}),
                ("memory_search", {"query": "fresh service deploys", "project": NEW}),
            ],
        )
    )


def _staff(make_user: Any, name: str, *codenames: str) -> Client:
    user = make_user(name)
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def test_the_requester_hears_it_awaits_approval_and_writes_there_once_an_operator_approves(
    tokens: dict[str, str], alice: Any, charlie: Any, make_user: Any, settings: Any
) -> None:
    settings.ATRIUM_PROJECT_APPROVAL = True
    asked = Client().post(
        "/api/v1/palaces",
        json.dumps({"origin": NEW}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {tokens['charlie']}",
    )
    assert asked.status_code == 403 and asked.json()["error"]["code"] == "awaiting_approval"
    request = ProjectRequest.objects.get(origin_key=NEW_KEY)

    saved, found = _save_and_search(tokens["charlie"])
    assert saved.is_error and found.is_error
    assert f"memory_save: project {NEW_KEY} awaits an operator's approval" in text_of(saved)
    assert 'project "personal"' in text_of(saved)  # what to send instead
    other, _ = _save_and_search(tokens["alice"])
    assert other.is_error and "project not found" in text_of(other) and "approval" not in text_of(other)
    assert not Memory.objects.filter(content=FACT).exists()

    # Staff without the permission is not offered the action, and a forged post decides nothing.
    auditor = _staff(make_user, "auditor", "view_projectrequest")
    assert 'value="approve_requests"' not in auditor.get(CHANGELIST).content.decode()
    auditor.post(CHANGELIST, {"action": "approve_requests", "_selected_action": [request.pk], "reason": "ok"})
    request.refresh_from_db()
    assert request.state == "pending" and not Palace.objects.filter(origin_key=NEW_KEY).exists()

    operator = _staff(make_user, "operator", "view_projectrequest", "approve_projectrequest")
    assert 'value="approve_requests"' in operator.get(CHANGELIST).content.decode()
    chosen = {"action": "approve_requests", "_selected_action": [request.pk], "reason": "team fresh, ticket 7"}
    done = operator.post(CHANGELIST, chosen, follow=True)
    assert f"created {NEW_KEY}, owned by charlie" in done.content.decode().lower()
    request.refresh_from_db()
    palace = Palace.objects.get(origin_key=NEW_KEY)
    assert (request.state, request.decided_by) == ("approved", "admin:operator")
    assert Membership.objects.get(palace=palace).user_id == charlie.pk
    approve = OpLog.objects.get(op="project.approve", target_id=request.pk)
    assert (approve.palace_id, approve.actor_name, approve.reason) == (palace.pk, "admin", "team fresh, ticket 7")
    audited = OpLog.objects.get(op="admin.action", target_kind="projectrequest")
    assert audited.detail["ids"] == [request.pk] and audited.reason == "team fresh, ticket 7"

    saved, found = _save_and_search(tokens["charlie"])
    assert not saved.is_error and not found.is_error, text_of(saved)
    assert Memory.objects.filter(palace=palace, content=FACT).exists()
    assert "fresh service deploys" in text_of(found)


def test_without_approval_the_project_is_created_and_a_stranger_still_gets_not_found(
    tokens: dict[str, str], charlie: Any, settings: Any
) -> None:
    settings.ATRIUM_PROJECT_APPROVAL = False
    made = Client().post(
        "/api/v1/palaces",
        json.dumps({"origin": NEW}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {tokens['charlie']}",
    )
    assert made.status_code == 201
    saved, _ = _save_and_search(tokens["charlie"])
    assert not saved.is_error
    stranger, _ = _save_and_search(tokens["alice"])
    assert stranger.is_error and "project not found" in text_of(stranger)
    assert not ProjectRequest.objects.exists()
