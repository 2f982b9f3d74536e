"""Project members managed by the people in them (the panel's Projects page and REST): create a project, invite,
change a role, remove, leave, transfer ownership.

The acting person comes from the door (session or verified token). Every change writes an op row in its
transaction. Answers match the rest of Atrium: a project the actor is not a member of is `NotFound` (like one that
does not exist), a member who is not an owner gets `PermissionDenied`, and a project always keeps at least one owner
(removing, demoting or the leaving of the last owner is a `Conflict` that says what to do instead). An unknown user
is `NotFound`; a personal palace, which has exactly one member, is a `Conflict`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import transaction

from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from palace.models import Membership, Palace
from palace.oplog import oplog_write
from palace.selectors import palace_get
from palace.services import project_create

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

OWNER = Membership.Role.OWNER
LAST_OWNER = "a project always keeps an owner: make another member owner first"
ONLY_OWNERS = "only an owner of this project can manage its members"


def _me(actor: Actor) -> AbstractBaseUser:
    if actor.user is None:
        raise PermissionDenied("a person manages project members")
    return actor.user


def _project(*, actor: Actor, palace_id: int) -> tuple[Palace, str]:
    """The project and the actor's role in it, locked for the change. Not a member: NotFound; personal: invalid."""
    palace = palace_get(user=_me(actor), palace_id=palace_id)
    if palace.kind != Palace.Kind.PROJECT:
        raise Conflict("a personal palace has exactly one member; members belong to project palaces")
    mine = Membership.objects.select_for_update().filter(palace=palace, user_id=_me(actor).pk).first()
    if mine is None:  # removed between the two reads
        raise NotFound("palace not found")
    return palace, mine.role


def _owned(*, actor: Actor, palace_id: int) -> Palace:
    palace, role = _project(actor=actor, palace_id=palace_id)
    if role != OWNER:
        raise PermissionDenied(ONLY_OWNERS)
    return palace


def _role(role: str) -> str:
    if role not in Membership.Role.values:
        raise InvalidInput(f"role must be one of {', '.join(Membership.Role.values)}")
    return role


def _user(username: str) -> Any:
    user = get_user_model().objects.filter(username=(username or "").strip(), is_active=True).first()
    if user is None:
        raise NotFound(f"no active user named {username!r}")
    return user


def _membership(palace: Palace, username: str) -> Membership:
    row = (
        Membership.objects.select_for_update()
        .select_related("user")
        .filter(palace=palace, user__username=(username or "").strip())
        .first()
    )
    if row is None:
        raise NotFound(f"{username!r} is not a member of this project")
    return row


def _other_owners(palace: Palace, membership: Membership) -> int:
    # Lock every owner row, so two owners demoting each other at once cannot leave the project without one.
    owners = list(Membership.objects.select_for_update().filter(palace=palace, role=OWNER).values_list("pk", flat=True))
    return len([pk for pk in owners if pk != membership.pk])


def _log(op: str, *, actor: Actor, palace: Palace, user: Any, **detail: Any) -> None:
    oplog_write(
        op=op,
        actor=actor,
        palace=palace,
        target_kind="user",
        target_id=user.pk,
        detail={"user": user.get_username(), **detail},
    )


def project_create_for(*, origin: str, name: str = "", actor: Actor) -> Palace:
    """A new project palace for a git origin (any spelling; normalised), owned by the acting person."""
    return project_create(origin=origin, owner=_me(actor), name=(name or "").strip()[:200], actor=actor)


def member_invite(*, palace_id: int, username: str, role: str, actor: Actor) -> Membership:
    """Add a user to a project with a role (owners only)."""
    with transaction.atomic():
        palace = _owned(actor=actor, palace_id=palace_id)
        user = _user(username)
        role = _role(role)
        if Membership.objects.filter(palace=palace, user_id=user.pk).exists():
            raise Conflict(f"{user.get_username()} is already a member; change their role instead")
        membership = Membership.objects.create(palace=palace, user_id=user.pk, role=role)
        _log("member.set", actor=actor, palace=palace, user=user, role=role, previous=None)
    return membership


def member_role_change(*, palace_id: int, username: str, role: str, actor: Actor) -> Membership:
    """Change a member's role (owners only); demoting the last owner is refused."""
    with transaction.atomic():
        palace = _owned(actor=actor, palace_id=palace_id)
        role = _role(role)
        membership = _membership(palace, username)
        previous = membership.role
        if previous == OWNER and role != OWNER and not _other_owners(palace, membership):
            raise Conflict(LAST_OWNER)
        if previous != role:
            membership.role = role
            membership.save(update_fields=["role"])
        _log("member.set", actor=actor, palace=palace, user=membership.user, role=role, previous=previous)
    return membership


def member_remove_by(*, palace_id: int, username: str, actor: Actor) -> None:
    """Remove a member (owners only); removing the last owner is refused."""
    with transaction.atomic():
        palace = _owned(actor=actor, palace_id=palace_id)
        membership = _membership(palace, username)
        if membership.role == OWNER and not _other_owners(palace, membership):
            raise Conflict(LAST_OWNER)
        # The op row first: once the actor removed themselves, the palace is no longer theirs to write rows in.
        _log("member.remove", actor=actor, palace=palace, user=membership.user, role=membership.role)
        membership.delete()


def project_leave(*, palace_id: int, actor: Actor) -> None:
    """The acting member leaves the project (any role); the last owner cannot."""
    with transaction.atomic():
        palace, role = _project(actor=actor, palace_id=palace_id)
        membership = _membership(palace, _me(actor).get_username())
        if role == OWNER and not _other_owners(palace, membership):
            raise Conflict(LAST_OWNER)
        _log("member.leave", actor=actor, palace=palace, user=membership.user, role=role)
        membership.delete()


def ownership_transfer(*, palace_id: int, username: str, actor: Actor) -> Membership:
    """Make another member the owner; the acting owner stays on as an editor (owners only)."""
    with transaction.atomic():
        palace = _owned(actor=actor, palace_id=palace_id)
        me = _me(actor)
        membership = _membership(palace, username)
        if membership.user_id == me.pk:
            raise Conflict("you already own this project; name another member")
        previous = membership.role
        membership.role = OWNER
        membership.save(update_fields=["role"])
        Membership.objects.filter(palace=palace, user_id=me.pk).update(role=Membership.Role.EDITOR)
        _log("member.transfer", actor=actor, palace=palace, user=membership.user, role=OWNER, previous=previous)
    return membership


def project_members(*, palace_id: int, actor: Actor) -> tuple[Palace, str, list[Membership]]:
    """A project, the actor's role in it and its members by name (any member may look)."""
    palace = palace_get(user=_me(actor), palace_id=palace_id)
    if palace.kind != Palace.Kind.PROJECT:
        raise NotFound("project not found")
    rows = list(Membership.objects.filter(palace=palace).select_related("user").order_by("user__username"))
    mine = next((m.role for m in rows if m.user_id == _me(actor).pk), "")
    return palace, mine, rows
