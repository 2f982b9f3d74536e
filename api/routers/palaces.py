from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Router, Schema, Status

from api.auth import caller_of
from api.schemas import ErrorOut
from palace import membership, selectors
from palace.models import Membership, Palace

router = Router(tags=["palaces"])
ERRORS: dict[int, Any] = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut, 422: ErrorOut}
Role = Literal["owner", "editor", "viewer"]


class PalaceOut(Schema):
    id: int
    kind: str
    name: str
    origin: str | None
    role: str
    created_at: datetime


class MemberOut(Schema):
    username: str
    role: str


class InvitationOut(Schema):
    username: str
    role: str
    state: Literal["pending"] = Field(description="an invitation grants nothing until the invited user accepts it")


class InvitedOut(Schema):
    id: int
    kind: str
    name: str
    origin: str | None
    role: str = Field(description="the role you get by accepting")
    invited_at: datetime


@router.get("", response={200: list[PalaceOut], 401: ErrorOut})
def palaces_list(request: HttpRequest) -> list[PalaceOut]:
    """The palaces you may read, with your role in each (personal first)."""
    caller = caller_of(request)
    return [
        PalaceOut(id=p.pk, kind=p.kind, name=p.name, origin=p.origin_key, role=role, created_at=p.created_at)
        for p, role in selectors.palaces_with_roles(user=caller.user)
    ]


@router.get("/invitations", response={200: list[InvitedOut], 401: ErrorOut})
def invitations(request: HttpRequest) -> list[InvitedOut]:
    """Your invitations to projects, waiting for you to accept or decline them."""
    caller = caller_of(request)
    return [
        InvitedOut(
            id=m.palace.pk,
            kind=m.palace.kind,
            name=m.palace.name,
            origin=m.palace.origin_key,
            role=m.role,
            invited_at=m.created_at,
        )
        for m in membership.invitations_pending(actor=caller.actor)
    ]


@router.get("/{int:palace_id}/members", response={200: list[MemberOut], 401: ErrorOut, 404: ErrorOut, 422: ErrorOut})
def palace_members(request: HttpRequest, palace_id: int) -> list[MemberOut]:
    """Members of a palace you belong to."""
    caller = caller_of(request)
    return [
        MemberOut(username=m.user.get_username(), role=m.role)
        for m in selectors.palace_members(user=caller.user, palace_id=palace_id)
    ]


# --- managing a project (owners; leaving is for any member) ---------------------------------------------------------


# What normalize_origin (palace/origins.py) accepts, as a pattern the schema can state: a URL (https, http, ssh, git,
# git+ssh, ssh+git; optional user and port) or the scp-like `user@host:owner/repo`, a dotted host, two or more path
# segments that do not start with a dot, optional `.git` and trailing slash.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = rf"{_LABEL}(?:\.{_LABEL})+"
_SEG = r"[A-Za-z0-9_~+-][A-Za-z0-9._~+-]{0,99}"
ORIGIN_PATTERN = (
    rf"^(?:(?:https?|ssh|git|git\+ssh|ssh\+git)://(?:[A-Za-z0-9._-]+@)?{_HOST}(?::[0-9]{{1,5}})?(?:/{_SEG}){{2,8}}/?"
    rf"|(?:[A-Za-z0-9._-]+@)?{_HOST}:{_SEG}(?:/{_SEG}){{1,7}}/?)$"
)


class ProjectIn(Schema):
    origin: str = Field(
        min_length=1,
        max_length=400,
        pattern=ORIGIN_PATTERN,
        description="the git origin, any spelling (git@github.com:team/repo.git, https://github.com/team/repo)",
    )
    name: str = Field("", max_length=200)


class InviteIn(Schema):
    username: str = Field(min_length=1, max_length=150)
    role: Role


class RoleIn(Schema):
    role: Role


class TransferIn(Schema):
    username: str = Field(min_length=1, max_length=150, description="a member who becomes owner; you become editor")


def _member_out(m: Membership) -> MemberOut:
    return MemberOut(username=m.user.get_username(), role=m.role)


def _palace_out(p: Palace, role: str) -> PalaceOut:
    return PalaceOut(id=p.pk, kind=p.kind, name=p.name, origin=p.origin_key, role=role, created_at=p.created_at)


@router.post("", response={201: PalaceOut, **ERRORS})
def project_create(request: HttpRequest, payload: ProjectIn) -> Status[PalaceOut]:
    """Create a project palace for a git origin; you are its owner. 409 when the project exists already."""
    caller = caller_of(request)
    caller.require_write()
    palace = membership.project_create_for(origin=payload.origin, name=payload.name, actor=caller.actor)
    return Status(201, _palace_out(palace, Membership.Role.OWNER))


@router.post("/{int:palace_id}/members", response={201: InvitationOut, **ERRORS})
def member_invite(request: HttpRequest, palace_id: int, payload: InviteIn) -> Status[InvitationOut]:
    """Invite a user to a project with a role (owners only). The invitation is pending and grants nothing until
    they accept it (`POST /palaces/{id}/accept`). The answer is the same whether or not the name is an active user;
    409 for someone who is a member already."""
    caller = caller_of(request)
    caller.require_write()
    i = membership.member_invite(palace_id=palace_id, username=payload.username, role=payload.role, actor=caller.actor)
    return Status(201, InvitationOut(username=i.username, role=i.role, state="pending"))


@router.post("/{int:palace_id}/accept", response={200: PalaceOut, **ERRORS})
def invitation_accept(request: HttpRequest, palace_id: int) -> PalaceOut:
    """Accept your invitation to a project: you become a member with the role offered. 404 when none is waiting."""
    caller = caller_of(request)
    caller.require_write()
    m = membership.invitation_accept(palace_id=palace_id, actor=caller.actor)
    return _palace_out(m.palace, m.role)


@router.post("/{int:palace_id}/decline", response={204: None, **ERRORS})
def invitation_decline(request: HttpRequest, palace_id: int) -> Status[None]:
    """Decline your invitation to a project: it is gone. 404 when none is waiting."""
    caller = caller_of(request)
    caller.require_write()
    membership.invitation_decline(palace_id=palace_id, actor=caller.actor)
    return Status(204, None)


@router.patch("/{int:palace_id}/members/{username}", response={200: MemberOut, **ERRORS})
def member_role(request: HttpRequest, palace_id: int, username: str, payload: RoleIn) -> MemberOut:
    """Change a member's role (owners only; the last owner cannot be demoted)."""
    caller = caller_of(request)
    caller.require_write()
    m = membership.member_role_change(palace_id=palace_id, username=username, role=payload.role, actor=caller.actor)
    return _member_out(m)


@router.delete("/{int:palace_id}/members/{username}", response={204: None, **ERRORS})
def member_remove(request: HttpRequest, palace_id: int, username: str) -> Status[None]:
    """Remove a member (owners only; the last owner cannot be removed)."""
    caller = caller_of(request)
    caller.require_write()
    membership.member_remove_by(palace_id=palace_id, username=username, actor=caller.actor)
    return Status(204, None)


@router.post("/{int:palace_id}/leave", response={204: None, **ERRORS})
def project_leave(request: HttpRequest, palace_id: int) -> Status[None]:
    """Leave a project you are a member of (the last owner transfers ownership first)."""
    caller = caller_of(request)
    caller.require_write()
    membership.project_leave(palace_id=palace_id, actor=caller.actor)
    return Status(204, None)


@router.post("/{int:palace_id}/transfer", response={200: list[MemberOut], **ERRORS})
def ownership_transfer(request: HttpRequest, palace_id: int, payload: TransferIn) -> list[MemberOut]:
    """Make another member the owner; you stay on as an editor (owners only). Answers the members after."""
    caller = caller_of(request)
    caller.require_write()
    membership.ownership_transfer(palace_id=palace_id, username=payload.username, actor=caller.actor)
    _, _, rows = membership.project_members(palace_id=palace_id, actor=caller.actor)
    return [_member_out(m) for m in rows]
