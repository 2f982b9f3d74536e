"""Who may read and write which palace. Every read and every write in Atrium resolves palaces here.

A palace the caller may not see raises `NotFound` exactly like one that does not exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import QuerySet

from palace.errors import NotFound, PermissionDenied
from palace.models import Membership, Palace
from palace.origins import InvalidOrigin, normalize_origin

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

WRITE_ROLES = (Membership.Role.OWNER, Membership.Role.EDITOR)


def _active(user: AbstractBaseUser | AnonymousUser | None) -> bool:
    return user is not None and bool(user.is_authenticated) and bool(getattr(user, "is_active", False))


def _uid(user: AbstractBaseUser | AnonymousUser | None) -> int:
    assert user is not None
    assert user.pk is not None
    return int(user.pk)


def palaces_readable(*, user: AbstractBaseUser | AnonymousUser | None) -> QuerySet[Palace]:
    """The palaces `user` may read: those they are a member of (any role)."""
    if not _active(user):
        return Palace.objects.none()
    assert user is not None
    return Palace.objects.filter(memberships__user_id=_uid(user)).distinct()


def palaces_writable(*, user: AbstractBaseUser | AnonymousUser | None) -> QuerySet[Palace]:
    if not _active(user):
        return Palace.objects.none()
    assert user is not None
    return Palace.objects.filter(memberships__user_id=_uid(user), memberships__role__in=WRITE_ROLES).distinct()


def role_in(*, user: AbstractBaseUser | AnonymousUser | None, palace: Palace) -> str | None:
    if not _active(user):
        return None
    assert user is not None
    return Membership.objects.filter(user_id=_uid(user), palace=palace).values_list("role", flat=True).first()


def palace_get(
    *,
    user: AbstractBaseUser | AnonymousUser | None,
    palace_id: int | None = None,
    origin: str | None = None,
    write: bool = False,
) -> Palace:
    """Resolve one palace by id or git origin (or the caller's personal palace when neither is given).

    Raises NotFound when it does not exist or the caller is not a member, PermissionDenied when the caller is a
    member but `write` is asked and their role is viewer.
    """
    if not _active(user):
        raise NotFound("palace not found")
    assert user is not None
    qs = Palace.objects.filter(memberships__user_id=_uid(user))
    if palace_id is not None:
        qs = qs.filter(pk=palace_id)
    elif origin is not None:
        try:
            key = normalize_origin(origin)
        except InvalidOrigin as exc:
            raise NotFound(f"project not found: {exc}") from exc
        qs = qs.filter(origin_key=key)
    else:
        qs = qs.filter(kind=Palace.Kind.PERSONAL, personal_owner_id=user.pk)
    row = qs.values_list("pk", "memberships__role").filter(memberships__user_id=_uid(user)).first()
    if row is None:
        raise NotFound("palace not found" if origin is None else f"project not found: {origin}")
    if write and row[1] not in WRITE_ROLES:
        raise PermissionDenied("you have read-only access to this palace")
    return Palace.objects.get(pk=row[0])


def palaces_with_roles(*, user: AbstractBaseUser | AnonymousUser | None) -> list[tuple[Palace, str]]:
    """The caller's palaces with their role, personal first, then projects by key."""
    if not _active(user):
        return []
    assert user is not None
    rows = Membership.objects.filter(user_id=_uid(user)).select_related("palace")
    pairs = [(m.palace, m.role) for m in rows]
    pairs.sort(key=lambda pr: (pr[0].kind != Palace.Kind.PERSONAL, pr[0].origin_key or ""))
    return pairs


def palace_members(*, user: AbstractBaseUser | AnonymousUser | None, palace_id: int) -> list[Membership]:
    palace = palace_get(user=user, palace_id=palace_id)
    return list(Membership.objects.filter(palace=palace).select_related("user").order_by("user__username"))
