"""New projects on a server whose operator approves them (`ATRIUM_PROJECT_APPROVAL`).

Without approval the first person to name a git origin (the panel's "New project", `POST /api/v1/palaces`, an import
into a new origin) owns its palace. With it, that person gets `AwaitingApproval` and a recorded `ProjectRequest`
instead; an operator approves it in the admin (Project requests) or creates the project with `atrium project create
ORIGIN --owner NAME`, and the palace is created with the requester as its owner. Until then the requester's tools
answer "awaits an operator's approval" for that origin (palace/selectors.palace_get), everybody else "not found".

The request is recorded whether or not a palace for the origin exists already (the requester cannot see one they are
not a member of): asking is no oracle for which projects exist. Approving one whose palace exists is a `Conflict` that
says to add the person as a member instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from palace.actors import Actor
from palace.errors import AwaitingApproval, Conflict, InvalidInput, NotFound
from palace.models import Membership, Palace, ProjectRequest
from palace.oplog import oplog_write
from palace.origins import InvalidOrigin, normalize_origin
from palace.services import project_create

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

PENDING = ProjectRequest.State.PENDING


def project_claim(*, origin: str, user: AbstractBaseUser, name: str = "", actor: Actor) -> Palace:
    """A person's own new project: created at once with them as owner, or, when the operator approves new projects,
    a recorded request and `AwaitingApproval`.

    Call it outside a transaction when approval may be on: the request must outlive the error raised after it."""
    if not settings.ATRIUM_PROJECT_APPROVAL:
        return project_create(origin=origin, owner=user, name=name, actor=actor)
    try:
        key = normalize_origin(origin)
    except InvalidOrigin as exc:
        raise InvalidInput(str(exc), field="project") from exc
    if Membership.objects.filter(user_id=user.pk, palace__origin_key=key, state=Membership.State.ACCEPTED).exists():
        raise Conflict(f"a project palace for {key} already exists")  # theirs: nothing to ask for
    with transaction.atomic():
        row, created = ProjectRequest.objects.get_or_create(
            origin_key=key, requester_id=user.pk, state=PENDING, defaults={"name": (name or "")[:200]}
        )
        if created:
            oplog_write(
                op="project.request",
                actor=actor,
                target_kind="project_request",
                target_id=row.pk,
                detail={"origin": key, "name": row.name},
            )
    raise AwaitingApproval.for_origin(key, requested=f"{row.created_at:%Y-%m-%d %H:%M} UTC")


def _pending(request_id: int) -> ProjectRequest:
    row = ProjectRequest.objects.select_for_update().select_related("requester").filter(pk=request_id).first()
    if row is None:
        raise NotFound(f"no project request {request_id}")
    if row.state != PENDING:
        raise Conflict(f"the request for {row.origin_key} by {row.requester.get_username()} was {row.state} already")
    return row


def project_request_approve(*, request_id: int, actor: Actor, reason: str = "") -> Palace:
    """Create the requested project with the requester as its owner (project_create marks the request approved)."""
    with transaction.atomic():
        row = _pending(request_id)
        username = row.requester.get_username()
        if Palace.objects.filter(origin_key=row.origin_key).exists():
            raise Conflict(
                f"a project palace for {row.origin_key} exists already: add {username} as a member instead "
                f"(`atrium project add-member {row.origin_key} {username}:editor`) and decline the request"
            )
        palace = project_create(origin=f"https://{row.origin_key}", owner=row.requester, name=row.name, actor=actor)
        oplog_write(
            op="project.approve",
            actor=actor,
            palace=palace,
            target_kind="project_request",
            target_id=row.pk,
            reason=reason,
            detail={"origin": row.origin_key, "owner": username},
        )
    return palace


def project_request_decline(*, request_id: int, actor: Actor, reason: str = "") -> ProjectRequest:
    """Decline a pending request: no palace; the requester's tools answer "not found" for the origin again."""
    with transaction.atomic():
        row = _pending(request_id)
        row.state, row.decided_at, row.decided_by = ProjectRequest.State.DECLINED, timezone.now(), actor.label[:200]
        row.save(update_fields=["state", "decided_at", "decided_by"])
        oplog_write(
            op="project.decline",
            actor=actor,
            target_kind="project_request",
            target_id=row.pk,
            reason=reason,
            detail={"origin": row.origin_key, "requester": row.requester.get_username()},
        )
    return row
