"""Writes to the palace structure: users' personal palaces, projects and their members."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound
from palace.models import Membership, Palace, ProjectRequest
from palace.oplog import oplog_write
from palace.origins import InvalidOrigin, normalize_origin

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


def palace_personal_ensure(*, user: AbstractBaseUser, actor: Actor | None = None) -> Palace:
    """The user's personal palace, created (with an owner membership and an op row) on first need."""
    existing = Palace.objects.filter(personal_owner_id=user.pk).first()
    if existing is not None:
        return existing
    with transaction.atomic():
        palace, created = Palace.objects.get_or_create(
            personal_owner_id=user.pk,
            defaults={"kind": Palace.Kind.PERSONAL, "name": f"{user.get_username()}'s palace"},
        )
        if created:
            Membership.objects.create(palace=palace, user_id=user.pk, role=Membership.Role.OWNER)
            oplog_write(
                op="palace.create",
                actor=actor or Actor.for_system("signup"),
                palace=palace,
                target_kind="palace",
                target_id=palace.pk,
                reason="personal palace for a new user",
            )
    return palace


def user_create(
    *, username: str, email: str = "", password: str | None = None, is_admin: bool = False, actor: Actor
) -> AbstractBaseUser:
    User = get_user_model()
    username = username.strip()
    if not username or len(username) > 150:
        raise InvalidInput("a user name is 1–150 characters")
    with transaction.atomic():
        if User.objects.filter(username=username).exists():
            raise Conflict(f"user {username!r} already exists")
        user = User(username=username, email=email, is_staff=is_admin, is_superuser=is_admin)
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save()
        oplog_write(
            op="user.create",
            actor=actor,
            target_kind="user",
            target_id=user.pk,
            detail={"username": username, "admin": is_admin},
        )
        palace_personal_ensure(user=user, actor=actor)
    return user


def project_create(*, origin: str, owner: AbstractBaseUser, name: str = "", actor: Actor) -> Palace:
    """A project palace for `origin`, owned by `owner`, at once: the operator's act (`atrium project create`, an
    approval), or a person's own when the server does not approve new projects (palace/approval.project_claim). The
    owner's pending request for the origin, if any, is approved by it."""
    try:
        key = normalize_origin(origin)
    except InvalidOrigin as exc:
        raise InvalidInput(str(exc)) from exc
    try:
        with transaction.atomic():
            # The name defaults to the key, which may be up to 400 characters; the name column holds 200.
            palace = Palace.objects.create(kind=Palace.Kind.PROJECT, name=(name or key)[:200], origin_key=key)
            Membership.objects.create(palace=palace, user_id=owner.pk, role=Membership.Role.OWNER)
            oplog_write(
                op="palace.create",
                actor=actor,
                palace=palace,
                target_kind="palace",
                target_id=palace.pk,
                detail={"origin": key, "owner": owner.get_username()},
            )
            ProjectRequest.objects.filter(
                origin_key=key, requester_id=owner.pk, state=ProjectRequest.State.PENDING
            ).update(state=ProjectRequest.State.APPROVED, decided_at=timezone.now(), decided_by=actor.label[:200])
    except IntegrityError as exc:
        raise Conflict(f"a project palace for {key} already exists") from exc
    return palace


def member_set(*, palace: Palace, user: AbstractBaseUser, role: str, actor: Actor) -> Membership:
    """Add a member or change their role (owner/editor/viewer), accepted at once: the operator's act (`atrium
    project`, an admin's revert), unlike an owner's invitation (palace/membership.py), which waits for consent. A
    pending invitation of the user becomes an accepted membership."""
    if role not in Membership.Role.values:
        raise InvalidInput(f"role must be one of {', '.join(Membership.Role.values)}")
    if palace.kind == Palace.Kind.PERSONAL:
        raise InvalidInput("a personal palace has exactly one member")
    with transaction.atomic():
        membership, created = Membership.objects.select_for_update().get_or_create(
            palace=palace, user_id=user.pk, defaults={"role": role, "state": Membership.State.ACCEPTED}
        )
        accepted = membership.state == Membership.State.ACCEPTED
        previous = None if created or not accepted else membership.role
        if not created and (membership.role != role or not accepted):
            membership.role, membership.state = role, Membership.State.ACCEPTED
            membership.save(update_fields=["role", "state"])
        oplog_write(
            op="member.set",
            actor=actor,
            palace=palace,
            target_kind="user",
            target_id=user.pk,
            detail={"user": user.get_username(), "role": role, "previous": previous},
        )
    return membership


def member_remove(*, palace: Palace, user: AbstractBaseUser, actor: Actor) -> None:
    with transaction.atomic():
        deleted, _ = Membership.objects.filter(palace=palace, user_id=user.pk).delete()
        if not deleted:
            raise NotFound(f"{user.get_username()} is not a member")
        oplog_write(
            op="member.remove",
            actor=actor,
            palace=palace,
            target_kind="user",
            target_id=user.pk,
            detail={"user": user.get_username()},
        )
