"""Who may read and write which palace (every read and every write in Atrium resolves palaces here), and the op
log's pages (REST's /oplog and the panel's Log read the same query).

A palace the caller may not see raises `NotFound` exactly like one that does not exist.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate

from palace.errors import AwaitingApproval, NotFound, PermissionDenied
from palace.models import Membership, OpLog, Palace, ProjectRequest
from palace.oplog import CATEGORIES, category_filter
from palace.origins import InvalidOrigin, normalize_origin

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

WRITE_ROLES = (Membership.Role.OWNER, Membership.Role.EDITOR)
# Only an accepted membership grants anything: an invitation (pending) is not read access, not write access, and not
# in any list of the invitee's palaces (row-level security's functions, palace 0005, say the same).
ACCEPTED = Membership.State.ACCEPTED
PENDING = ProjectRequest.State.PENDING


def _active(user: AbstractBaseUser | AnonymousUser | None) -> bool:
    return user is not None and bool(user.is_authenticated) and bool(getattr(user, "is_active", False))


def _uid(user: AbstractBaseUser | AnonymousUser | None) -> int:
    assert user is not None
    assert user.pk is not None
    return int(user.pk)


def palaces_readable(*, user: AbstractBaseUser | AnonymousUser | None, kind: str | None = None) -> QuerySet[Palace]:
    """The palaces `user` may read: those they are an accepted member of (any role); only those of `kind` when
    given (then ordered by their key, as a list of projects is shown)."""
    if not _active(user):
        return Palace.objects.none()
    assert user is not None
    palaces = Palace.objects.filter(memberships__user_id=_uid(user), memberships__state=ACCEPTED).distinct()
    return palaces if kind is None else palaces.filter(kind=kind).order_by("origin_key")


def palace_ids_readable(*, user: AbstractBaseUser | AnonymousUser | None) -> list[int]:
    """The ids of the palaces `user` may read."""
    return list(palaces_readable(user=user).values_list("pk", flat=True))


def palaces_writable(*, user: AbstractBaseUser | AnonymousUser | None) -> QuerySet[Palace]:
    if not _active(user):
        return Palace.objects.none()
    assert user is not None
    return Palace.objects.filter(
        memberships__user_id=_uid(user), memberships__state=ACCEPTED, memberships__role__in=WRITE_ROLES
    ).distinct()


def palace_labels(
    *, user: AbstractBaseUser | AnonymousUser | None, palace_ids: Collection[int] | None = None
) -> dict[int, str]:
    """The labels ("my palace" or the project origin) of the palaces `user` may read, by id; only those in
    `palace_ids` when it is given."""
    palaces = palaces_readable(user=user)
    if palace_ids is not None:
        palaces = palaces.filter(pk__in=list(palace_ids))
    return {p.pk: p.label for p in palaces.only("pk", "kind", "name", "origin_key")}


def role_in(*, user: AbstractBaseUser | AnonymousUser | None, palace: Palace) -> str | None:
    if not _active(user):
        return None
    assert user is not None
    mine = Membership.objects.filter(user_id=_uid(user), palace=palace, state=ACCEPTED)
    return mine.values_list("role", flat=True).first()


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
    # One membership row of the caller (accepted) decides: a missing palace, one they are not a member of and one
    # they are only invited to all answer with the same NotFound and message (no existence oracle).
    qs = Membership.objects.filter(user_id=_uid(user), state=ACCEPTED)
    key = None
    if palace_id is not None:
        qs = qs.filter(palace_id=palace_id)
    elif origin is not None:
        try:
            key = normalize_origin(origin)
        except InvalidOrigin as exc:
            raise NotFound(f"project not found: {exc}") from exc
        qs = qs.filter(palace__origin_key=key)
    else:
        qs = qs.filter(palace__kind=Palace.Kind.PERSONAL, palace__personal_owner_id=user.pk)
    row = qs.values_list("palace_id", "role").first()
    if row is None:
        if key is not None:
            _refuse_if_awaiting(user=user, origin_key=key)
        raise NotFound("palace not found" if origin is None else f"project not found: {origin}")
    if write and row[1] not in WRITE_ROLES:
        raise PermissionDenied("you have read-only access to this palace")
    return Palace.objects.get(pk=row[0])


def project_request_pending(*, user: AbstractBaseUser | AnonymousUser, origin_key: str) -> ProjectRequest | None:
    """The person's own request for the project `origin_key`, while it waits for an operator."""
    pending = ProjectRequest.objects.filter(requester_id=_uid(user), origin_key=origin_key, state=PENDING)
    return pending.first()


def _refuse_if_awaiting(*, user: AbstractBaseUser | AnonymousUser, origin_key: str) -> None:
    # Told only to the person who asked (about their own request), and the same whether or not a palace for the
    # origin exists meanwhile: no answer about anyone else's project.
    if not settings.ATRIUM_PROJECT_APPROVAL:
        return
    pending = project_request_pending(user=user, origin_key=origin_key)
    if pending is not None:
        raise AwaitingApproval.for_origin(origin_key, requested=f"{pending.created_at:%Y-%m-%d %H:%M} UTC")


def palaces_with_roles(*, user: AbstractBaseUser | AnonymousUser | None) -> list[tuple[Palace, str]]:
    """The caller's palaces with their role, personal first, then projects by key."""
    if not _active(user):
        return []
    assert user is not None
    rows = Membership.objects.filter(user_id=_uid(user), state=ACCEPTED).select_related("palace")
    pairs = [(m.palace, m.role) for m in rows]
    pairs.sort(key=lambda pr: (pr[0].kind != Palace.Kind.PERSONAL, pr[0].origin_key or ""))
    return pairs


def palace_members(*, user: AbstractBaseUser | AnonymousUser | None, palace_id: int) -> list[Membership]:
    """The accepted members of a palace the caller is an accepted member of (invitations are not listed: whether a
    name is a user, and whether they have answered, is theirs to tell)."""
    palace = palace_get(user=user, palace_id=palace_id)
    members = Membership.objects.filter(palace=palace, state=ACCEPTED)
    return list(members.select_related("user").order_by("user__username"))


# --- the op log ----------------------------------------------------------------------------------------------------

OPLOG_PAGE_MAX = 200


@dataclass
class OpLogPage:
    items: list[OpLog]
    next_before: int | None  # pass back as `before` for the next page


def oplog_page(
    *,
    user: AbstractBaseUser | AnonymousUser | None,
    palaces: Sequence[Palace] | None = None,
    op: str | None = None,
    category: str | None = None,
    since: datetime | None = None,
    before: int | None = None,
    limit: int = 50,
) -> OpLogPage:
    """One page of the op log, newest first (keyset on the id: `before` is the last id of the previous page).

    `palaces` are palaces the caller resolved through this module; without them, every palace `user` may read plus
    the user's own account-level rows (tokens). `op` is an op name or a prefix ending in "." ("memory."),
    `category` one of the four (palace.oplog).
    """
    if palaces is not None:
        qs = OpLog.objects.filter(palace_id__in=[p.pk for p in palaces])
    else:
        mine = Q(palace__isnull=True, actor_user_id=_uid(user)) if _active(user) else Q(pk__in=[])
        qs = OpLog.objects.filter(Q(palace__in=palaces_readable(user=user).values("pk")) | mine)
    if op:
        qs = qs.filter(op__startswith=op) if op.endswith(".") else qs.filter(op=op)
    if category is not None and category in CATEGORIES:
        qs = qs.filter(category_filter(category))
    if since is not None:
        qs = qs.filter(created_at__gte=since)
    if before is not None:
        qs = qs.filter(pk__lt=before)
    rows = list(qs.order_by("-pk")[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    return OpLogPage(items=rows, next_before=rows[-1].pk if more and rows else None)


def oplog_get(*, palace_ids: Sequence[int], oplog_id: int) -> OpLog | None:
    """One op row of the given (already resolved) palaces, or None."""
    return OpLog.objects.filter(palace_id__in=palace_ids, pk=oplog_id).first()


def oplog_day_counts(*, palace_ids: Sequence[int], since: datetime) -> list[tuple[date, str, int]]:
    """(local day, op, rows) for the op rows of the palaces since a moment: one grouped read."""
    grouped = (
        OpLog.objects.filter(palace_id__in=palace_ids, created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values_list("day", "op")
        .annotate(n=Count("id"))
        .order_by()
    )
    return [(day, op, n) for day, op, n in grouped]


def oplog_last_id(*, palace_id: int, ignoring: Sequence[str] = ()) -> int:
    """The newest op row of a palace: a version number for everything derived from its contents. `ignoring`
    leaves out ops by prefix (e.g. "review.") for a figure those ops cannot change."""
    qs = OpLog.objects.filter(palace_id=palace_id)
    for prefix in ignoring:
        qs = qs.exclude(op__startswith=prefix)
    return qs.order_by("-id").values_list("id", flat=True).first() or 0
