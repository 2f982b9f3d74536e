"""Token create / verify / revoke. REST bearer auth and the MCP token verifier share `token_verify`."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import TOKEN_PREFIX, ApiToken
from palace.actors import Actor
from palace.errors import InvalidInput, NotFound
from palace.models import Palace
from palace.oplog import oplog_write
from palace.selectors import palace_get

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

# last_used_at is a hint, not an audit trail; writing it on every call would make each read a write.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def token_create(
    *,
    user: AbstractBaseUser,
    label: str,
    scope: str = "write",
    expires_at: datetime | None = None,
    project: str | None = None,
    actor: Actor,
    oauth_application_id: int | None = None,
) -> tuple[ApiToken, str]:
    """Create a token and return it with the raw value, which is never stored and never shown again. `project` (a
    git origin, any spelling) is its default project: one the user belongs to (else "not found", as everywhere).
    With `oauth_application_id` the row is an OAuth grant (accounts/oauth.py); its raw value is thrown away."""
    label = (label or "").strip()
    if not label or len(label) > 100:
        raise InvalidInput("a token label is 1–100 characters")
    if scope not in ApiToken.Scope.values:
        raise InvalidInput("scope must be read or write")
    default = None
    if project:
        stored = Palace.objects.filter(origin_key=project.strip()).values_list("pk", flat=True).first()
        default = (
            palace_get(user=user, palace_id=stored) if stored is not None else palace_get(user=user, origin=project)
        )
        if default.kind != Palace.Kind.PROJECT:
            raise InvalidInput("a token's default project is a project palace (a git origin)")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ApiToken.objects.create(
            user_id=user.pk,
            label=label,
            prefix="oauth" if oauth_application_id is not None else raw[:10],
            key_hash=hash_token(raw),
            scope=scope,
            expires_at=expires_at,
            default_project=default,
            oauth_application_id=oauth_application_id,
        )
        oplog_write(
            op="token.create",
            actor=actor,
            target_kind="token",
            target_id=token.pk,
            detail={
                "label": label,
                "scope": scope,
                "user": user.get_username(),
                "expires_at": expires_at.isoformat() if expires_at else None,
                "default_project": default.origin_key if default is not None else None,
                **({"oauth_client": oauth_application_id} if oauth_application_id is not None else {}),
            },
        )
    return token, raw


def token_verify(raw: str | None, *, now: datetime | None = None) -> ApiToken | None:
    """The live token for `raw`, or None (unknown, revoked, expired, inactive user, malformed)."""
    if not raw or not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    moment = now or timezone.now()
    # key_hash is unique: a slice, not .first(), which would add an ORDER BY to compile (every MCP and REST call).
    rows = list(ApiToken.objects.select_related("user").filter(key_hash=hash_token(raw))[:1])
    token = rows[0] if rows else None
    if token is None or not token.is_usable(moment) or not token.user.is_active:
        return None
    if token.last_used_at is None or moment - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=moment)
        token.last_used_at = moment
    return token


def token_get_live(*, token_id: int, now: datetime | None = None) -> ApiToken | None:
    """The token with this id, with its user, while it is usable (not revoked, not expired, its user active), else
    None: a token verified earlier in a request, checked again where it is used later."""
    token = ApiToken.objects.select_related("user").filter(pk=token_id).first()
    if token is None or not token.is_usable(now or timezone.now()) or not token.user.is_active:
        return None
    return token


def token_revoke(*, token_id: int, user: AbstractBaseUser | None, actor: Actor, reason: str = "") -> ApiToken:
    """Revoke a token (or an OAuth grant). `user` limits it to that user's tokens (None: an operator may revoke
    any); `reason` goes on the op row (the admin's)."""
    with transaction.atomic():
        qs = ApiToken.objects.select_for_update()
        if user is not None:
            qs = qs.filter(user_id=user.pk)
        token = qs.filter(pk=token_id).first()
        if token is None:
            raise NotFound("token not found")
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            if token.oauth_application_id is not None:  # an OAuth grant: what its client holds ends with it
                _oauth_tokens_delete(grant=token)
            oplog_write(
                op="token.revoke",
                actor=actor,
                target_kind="token",
                target_id=token.pk,
                reason=reason,
                detail={"label": token.label, "user": token.user.get_username()},
            )
    return token


def _oauth_tokens_delete(*, grant: ApiToken) -> None:
    """End what a client holds through this grant, and nothing it holds through another (the same person may have
    approved the same client on another device): the code issued with the grant, if not yet exchanged, and the
    access and refresh tokens of the refresh-token family its exchange started (accounts/oauth.py)."""
    from oauth2_provider.models import AccessToken, Grant, RefreshToken

    if grant.oauth_code_id is not None:
        Grant.objects.filter(pk=grant.oauth_code_id).delete()
    if grant.oauth_token_family is not None:
        family = RefreshToken.objects.filter(token_family=grant.oauth_token_family)
        AccessToken.objects.filter(
            Q(pk__in=family.values("access_token_id")) | Q(source_refresh_token__in=family)
        ).delete()
        family.delete()


def tokens_for(*, user: AbstractBaseUser) -> list[ApiToken]:
    return list(
        ApiToken.objects.filter(user_id=user.pk)
        .select_related("default_project", "oauth_application")
        .order_by("-created_at")
    )
