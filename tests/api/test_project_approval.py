"""Issue 24 (low): the first person to name a git origin owned it. With ATRIUM_PROJECT_APPROVAL an operator approves
new projects: at the REST door (POST /palaces, an import into a new origin) the person gets a 403 that says the
project awaits approval and a recorded request, no palace; without the setting it is created as before (control),
and once approved the requester owns it and writes there."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from django.core.management import call_command
from django.test import Client

from memory.models import Memory
from palace.models import Membership, OpLog, Palace, ProjectRequest

JSON = "application/json"
NEW = "git@github.com:team/new-thing.git"
NEW_KEY = "github.com/team/new-thing"
AWAITS = f"project {NEW_KEY} awaits an operator's approval"


def _create(client: Any, origin: str, **auth: Any) -> Any:
    return client.post("/api/v1/palaces", json.dumps({"origin": origin, "name": "New"}), content_type=JSON, **auth)


def test_a_new_origin_without_approval_is_created_for_the_first_person_who_names_it(
    charlie: Any, token_for: Any, bearer: Any, settings: Any
) -> None:
    settings.ATRIUM_PROJECT_APPROVAL = False
    made = _create(Client(), NEW, **bearer(token_for(charlie)))
    assert made.status_code == 201, made.content
    palace = Palace.objects.get(origin_key=NEW_KEY)
    assert Membership.objects.get(palace=palace).user_id == charlie.pk
    assert not ProjectRequest.objects.exists()


def test_with_approval_naming_a_new_origin_records_a_request_and_creates_nothing(
    charlie: Any, alice: Any, token_for: Any, bearer: Any, settings: Any
) -> None:
    settings.ATRIUM_PROJECT_APPROVAL = True
    auth = bearer(token_for(charlie))
    refused = _create(Client(), NEW, **auth)
    assert refused.status_code == 403, refused.content
    error = refused.json()["error"]
    assert error["code"] == "awaiting_approval" and error["field"] == "project" and error["origin"] == NEW_KEY
    assert error["message"].startswith(AWAITS)
    assert not Palace.objects.filter(origin_key=NEW_KEY).exists()
    (request,) = ProjectRequest.objects.all()
    assert (request.origin_key, request.requester_id, request.state, request.name) == (
        NEW_KEY,
        charlie.pk,
        "pending",
        "New",
    )
    assert OpLog.objects.filter(op="project.request", actor_user=charlie, target_id=request.pk).count() == 1

    # Asking again (another spelling) is the same request, not a second one; the requester's reads say it waits.
    again = _create(Client(), f"https://{NEW_KEY}", **auth)
    assert again.status_code == 403 and ProjectRequest.objects.count() == 1
    search = Client().get(f"/api/v1/search?query=x&project={quote(NEW)}", **auth)
    assert search.status_code == 403 and search.json()["error"]["message"].startswith(AWAITS)
    # Someone who asked nothing gets the usual not found for the same origin (nothing about charlie's request).
    other = Client().get(f"/api/v1/search?query=x&project={quote(NEW)}", **bearer(token_for(alice)))
    assert other.status_code == 404 and "approval" not in other.content.decode()

    # The operator approves with the command: the requester owns the project and writes there.
    call_command("project", "create", NEW, "--owner", "charlie")
    request.refresh_from_db()
    assert request.state == "approved" and request.decided_by == "atrium project"
    palace = Palace.objects.get(origin_key=NEW_KEY)
    saved = Client().post(
        "/api/v1/memories",
        json.dumps({"content": "The new thing ships on Fridays.", "kind": "fact", "project": NEW}),
        content_type=JSON,
        **auth,
    )
    assert saved.status_code in (200, 201), saved.content
    assert Memory.objects.filter(palace=palace, content="The new thing ships on Fridays.").exists()


def test_with_approval_an_existing_project_answers_like_a_new_one_unless_you_are_in_it(
    alice: Any, charlie: Any, project: Palace, token_for: Any, bearer: Any, settings: Any
) -> None:
    """No oracle: an outsider asking for an existing project gets the same answer as for a new one (and a request the
    operator can decline); its member gets the conflict they would have got before."""
    settings.ATRIUM_PROJECT_APPROVAL = True
    outsider = _create(Client(), f"https://{project.origin_key}", **bearer(token_for(charlie)))
    assert outsider.status_code == 403 and outsider.json()["error"]["code"] == "awaiting_approval"
    member = _create(Client(), f"https://{project.origin_key}", **bearer(token_for(alice)))
    assert member.status_code == 409 and member.json()["error"]["code"] == "conflict"
    assert list(ProjectRequest.objects.values_list("requester_id", flat=True)) == [charlie.pk]


@pytest.mark.parametrize("approval", [True, False])
def test_an_import_into_a_new_origin_waits_for_approval_too(
    approval: bool, alice: Any, token_for: Any, bearer: Any, settings: Any
) -> None:
    settings.ATRIUM_PROJECT_APPROVAL = approval
    auth = bearer(token_for(alice))
    document = json.loads(Client().get("/api/v1/export", **auth).getvalue())
    answer = Client().post(f"/api/v1/import?project={quote(NEW)}", document, content_type=JSON, **auth)
    if approval:
        assert answer.status_code == 403 and answer.json()["error"]["message"].startswith(AWAITS)
        assert not Palace.objects.filter(origin_key=NEW_KEY).exists()
        assert ProjectRequest.objects.get().requester_id == alice.pk
    else:  # the control: created for the importer, as before
        assert answer.status_code == 200, answer.content
        palace = Palace.objects.get(origin_key=NEW_KEY)
        assert Membership.objects.get(palace=palace).user_id == alice.pk
