"""Requests for new projects (palace/approval.py, ATRIUM_PROJECT_APPROVAL): decline, an approval that finds the
project created meanwhile, the operator's `atrium project requests` and `create --owner`, and the admin's decline."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from palace.actors import Actor
from palace.approval import project_claim, project_request_approve, project_request_decline
from palace.errors import AwaitingApproval, Conflict, NotFound
from palace.models import Membership, OpLog, Palace, ProjectRequest
from palace.selectors import palace_get

ORIGIN = "git@github.com:team/wanted.git"
KEY = "github.com/team/wanted"


def _ask(user: Any) -> ProjectRequest:
    with pytest.raises(AwaitingApproval):
        project_claim(origin=ORIGIN, user=user, actor=Actor.for_user(user))
    return ProjectRequest.objects.get(requester=user, origin_key=KEY, state="pending")


def test_a_declined_request_creates_nothing_and_the_origin_is_not_found_again(
    charlie: Any, settings: Any, system: Actor
) -> None:
    settings.ATRIUM_PROJECT_APPROVAL = True
    request = _ask(charlie)
    with pytest.raises(AwaitingApproval):  # while it waits, the requester's reads say so
        palace_get(user=charlie, origin=ORIGIN)
    project_request_decline(request_id=request.pk, actor=system, reason="not ours")
    request.refresh_from_db()
    assert (request.state, request.decided_by) == ("declined", "tests")
    assert OpLog.objects.get(op="project.decline", target_id=request.pk).reason == "not ours"
    assert not Palace.objects.filter(origin_key=KEY).exists()
    with pytest.raises(NotFound, match="project not found"):
        palace_get(user=charlie, origin=ORIGIN)
    with pytest.raises(Conflict, match="declined already"):
        project_request_approve(request_id=request.pk, actor=system)
    assert _ask(charlie).pk != request.pk  # asking again is a new request


def test_approving_a_request_for_a_project_created_meanwhile_is_refused_with_what_to_do(
    alice: Any, charlie: Any, settings: Any, system: Actor
) -> None:
    settings.ATRIUM_PROJECT_APPROVAL = True
    first, second = _ask(alice), _ask(charlie)
    palace = project_request_approve(request_id=first.pk, actor=system)
    assert list(Membership.objects.filter(palace=palace).values_list("user_id", "role")) == [(alice.pk, "owner")]
    with pytest.raises(Conflict, match="add charlie as a member instead"):
        project_request_approve(request_id=second.pk, actor=system)
    second.refresh_from_db()
    assert second.state == "pending" and Membership.objects.filter(palace=palace).count() == 1


def test_the_operator_lists_requests_and_approves_one_by_creating_the_project(charlie: Any, settings: Any) -> None:
    settings.ATRIUM_PROJECT_APPROVAL = True
    out = StringIO()
    call_command("project", "requests", stdout=out)
    assert "No requests" in out.getvalue()
    request = _ask(charlie)
    out = StringIO()
    call_command("project", "requests", stdout=out)
    assert f"{request.pk}\t{KEY}\tcharlie\t" in out.getvalue()
    call_command("project", "create", ORIGIN, "--owner", "charlie", stdout=StringIO())
    request.refresh_from_db()
    assert request.state == "approved"
    assert palace_get(user=charlie, origin=ORIGIN, write=True).origin_key == KEY
    out = StringIO()
    call_command("project", "requests", stdout=out)
    assert "No requests" in out.getvalue()


def test_the_admin_declines_with_a_reason_and_an_op_row(charlie: Any, make_user: Any, settings: Any) -> None:
    settings.ATRIUM_PROJECT_APPROVAL = True
    request = _ask(charlie)
    root = Client()
    root.force_login(make_user("root", admin=True))
    url = "/admin/palace/projectrequest/"
    chosen = {"action": "decline_requests", "_selected_action": [request.pk]}
    refused = root.post(url, chosen, follow=True)
    assert "A reason is required" in refused.content.decode()
    request.refresh_from_db()
    assert request.state == "pending"
    root.post(url, {**chosen, "reason": "duplicate of team/app"}, follow=True)
    request.refresh_from_db()
    assert (request.state, request.decided_by) == ("declined", "admin:root")
    assert OpLog.objects.get(op="admin.action", target_kind="projectrequest").reason == "duplicate of team/app"
