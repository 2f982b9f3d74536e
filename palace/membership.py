"""Project members managed by the people in them (the panel's Projects page and REST): create a project, invite,
accept or decline an invitation, change a role, remove, leave, transfer ownership.

The acting person comes from the door (session or verified token). Every change writes an op row in its
transaction. Answers match the rest of Atrium: a project the actor is not a member of is `NotFound` (like one that
does not exist), a member who is not an owner gets `PermissionDenied`, and a project always keeps at least one owner
(removing, demoting or the leaving of the last owner is a `Conflict` that says what to do instead). An unknown user
is `NotFound`; a personal palace, which has exactly one member, is a `Conflict`.

An invitation is a pending membership that grants nothing until the invited person accepts it (consent: nobody is
put into someone else's search and profile). The inviter gets one answer whether the name is an active user or not,
and pending invitations are not listed to the project, so inviting is no oracle for who exists or who has answered.
The operator's `atrium project` command adds members directly (palace/services.member_set).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import transaction

from palace.actors import Actor
from palace.approval import project_claim
from palace.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from palace.models import Membership, Palace
from palace.oplog import oplog_write
from palace.selectors import palace_get

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

OWNER = Membership.Role.OWNER
ACCEPTED = Membership.State.ACCEPTED
PENDING = Membership.State.PENDING
NO_INVITATION = "no invitation to this palace is waiting for you"
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
    mine = Membership.objects.select_for_update().filter(palace=palace, user_id=_me(actor).pk, state=ACCEPTED).first()
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


def _membership(palace: Palace, username: str) -> Membership:
    row = (
        Membership.objects.select_for_update()
        .select_related("user")
        .filter(palace=palace, user__username=(username or "").strip(), state=ACCEPTED)
        .first()
    )
    if row is None:
        raise NotFound(f"{username!r} is not a member of this project")
    return row


def _other_owners(palace: Palace, membership: Membership) -> int:
    # Lock every owner row, so two owners demoting each other at once cannot leave the project without one.
    rows = Membership.objects.select_for_update().filter(palace=palace, role=OWNER, state=ACCEPTED)
    owners = list(rows.values_list("pk", flat=True))
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
    """A new project palace for a git origin (any spelling; normalised), owned by the acting person; or, when the
    operator approves new projects, their recorded request and `AwaitingApproval` (palace/approval.py)."""
    return project_claim(origin=origin, user=_me(actor), name=(name or "").strip()[:200], actor=actor)


@dataclass(frozen=True)
class Invitation:
    """What the inviter is told: the same for a name that is no active user and for one who has not answered."""

    username: str
    role: str
    state: str = PENDING


def member_invite(*, palace_id: int, username: str, role: str, actor: Actor) -> Invitation:
    """Invite a user to a project with a role (owners only): a pending membership that grants nothing until they
    accept. Inviting someone already invited changes the role offered. An accepted member is a `Conflict` (the
    members list shows them anyway)."""
    name = (username or "").strip()
    with transaction.atomic():
        palace = _owned(actor=actor, palace_id=palace_id)
        role = _role(role)
        user = get_user_model().objects.filter(username=name, is_active=True).first()
        row = Membership.objects.select_for_update().filter(palace=palace, user_id=user.pk).first() if user else None
        if row is not None and row.state == ACCEPTED:
            raise Conflict(f"{name} is already a member; change their role instead")
        if row is not None:
            row.role = role
            row.save(update_fields=["role"])
        elif user is not None:
            Membership.objects.create(palace=palace, user_id=user.pk, role=role, state=PENDING)
        # No user id on the row: the op log is readable by the project, and must not tell who exists either.
        oplog_write(
            op="member.invite",
            actor=actor,
            palace=palace,
            target_kind="invitation",
            detail={"user": name, "role": role},
        )
    return Invitation(username=name, role=role)


def invitations_pending(*, actor: Actor) -> list[Membership]:
    """The acting person's invitations waiting for an answer, with their projects, oldest first."""
    rows = Membership.objects.filter(user_id=_me(actor).pk, state=PENDING).select_related("palace")
    return list(rows.order_by("created_at", "pk"))


def _invitation(*, actor: Actor, palace_id: int) -> Membership:
    # One answer for a missing palace, one never offered, and one already answered (no existence oracle).
    row = (
        Membership.objects.select_for_update()
        .select_related("palace", "user")
        .filter(palace_id=palace_id, user_id=_me(actor).pk, state=PENDING)
        .first()
    )
    if row is None:
        raise NotFound(NO_INVITATION)
    return row


def invitation_accept(*, palace_id: int, actor: Actor) -> Membership:
    """The invited person accepts: from now on the membership grants its role."""
    with transaction.atomic():
        row = _invitation(actor=actor, palace_id=palace_id)
        row.state = ACCEPTED
        row.save(update_fields=["state"])
        _log("member.accept", actor=actor, palace=row.palace, user=row.user, role=row.role)
    return row


def invitation_decline(*, palace_id: int, actor: Actor) -> None:
    """The invited person declines: the invitation is gone. The op row is the decliner's own (no palace), so the
    project learns nothing from it."""
    with transaction.atomic():
        row = _invitation(actor=actor, palace_id=palace_id)
        palace, user = row.palace, row.user
        row.delete()
        oplog_write(
            op="member.decline",
            actor=actor,
            target_kind="palace",
            target_id=palace.pk,
            detail={"user": user.get_username(), "role": row.role, "project": palace.label},
        )


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
    rows = list(
        Membership.objects.filter(palace=palace, state=ACCEPTED).select_related("user").order_by("user__username")
    )
    mine = next((m.role for m in rows if m.user_id == _me(actor).pk), "")
    return palace, mine, rows
