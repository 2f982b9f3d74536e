from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest
from ninja import Router, Schema

from api.auth import caller_of
from api.schemas import ErrorOut
from palace import selectors

router = Router(tags=["palaces"])


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


@router.get("", response={200: list[PalaceOut], 401: ErrorOut})
def palaces_list(request: HttpRequest) -> list[PalaceOut]:
    """The palaces you may read, with your role in each (personal first)."""
    caller = caller_of(request)
    return [
        PalaceOut(id=p.pk, kind=p.kind, name=p.name, origin=p.origin_key, role=role, created_at=p.created_at)
        for p, role in selectors.palaces_with_roles(user=caller.user)
    ]


@router.get("/{int:palace_id}/members", response={200: list[MemberOut], 401: ErrorOut, 404: ErrorOut, 422: ErrorOut})
def palace_members(request: HttpRequest, palace_id: int) -> list[MemberOut]:
    """Members of a palace you belong to."""
    caller = caller_of(request)
    return [
        MemberOut(username=m.user.get_username(), role=m.role)
        for m in selectors.palace_members(user=caller.user, palace_id=palace_id)
    ]
