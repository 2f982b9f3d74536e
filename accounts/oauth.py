"""OAuth 2.1 sign-in for the MCP endpoint: grants, the access tokens' audience, and client registration.

django-oauth-toolkit (DOT) is the authorization server (authorization code + PKCE S256, refresh rotation with reuse
detection, RFC 8707 resource indicators stored on codes and tokens, RFC 7591 registration, revocation). What Atrium
adds, here:

- **The audience.** This server protects one resource, its `/mcp` URL (ATRIUM_PUBLIC_URL, else the request's own
  origin). An authorization request naming any other resource is refused (`invalid_target`); one naming none is
  bound to `/mcp`. `/mcp` accepts only tokens whose audience is itself, and the REST API accepts none of them (its
  bearer tokens are personal tokens only).
- **The grant.** Approving a client on the consent page creates an ApiToken row tied to that client
  (`oauth_application`): its scope (memory.read → read, memory.write → write), its default project, its last use
  and its revocation, with op rows, exactly as a personal token's. The client's access tokens act through that
  row, so the isolation, the audit attribution and the tools' precedence rules are a personal token's. Every
  approval is its own grant (a second device does not end the first), revocable alone: the grant row is bound
  to the code issued with it, then to the toolkit's refresh-token family that code's exchange starts and every
  rotation inherits, so an access token leads back to exactly one grant.
- **Registration.** Dynamic registration is open (clients register before anyone signs in), bounded per hour,
  and a registration that never led to a grant is deleted after ATRIUM_OAUTH_UNUSED_REGISTRATION_HOURS.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken, clear_expired
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from accounts.models import ApiToken
from accounts.tokens import LAST_USED_RESOLUTION, token_create, token_revoke
from palace.actors import Actor

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser
    from django.http import HttpRequest

__all__ = [
    "READ_SCOPE",
    "WRITE_SCOPE",
    "AtriumOAuth2Validator",
    "ThrottledRegistration",
    "oauth_grant_approve",
    "oauth_grants_end",
    "oauth_registrations_expire",
    "oauth_resource",
    "oauth_resource_allowed",
    "oauth_token_verify",
    "oauth_tokens_clear",
    "public_base",
]

READ_SCOPE = "memory.read"
WRITE_SCOPE = "memory.write"
MCP_PATH = "/mcp"


def public_base(request_base: str) -> str:
    """The origin clients reach this server on: ATRIUM_PUBLIC_URL when the operator set it (behind a proxy the
    request's own may be an internal one), else the request's `scheme://host[:port]`."""
    return (settings.ATRIUM_PUBLIC_URL or request_base).rstrip("/")


def oauth_resource(request_base: str) -> str:
    """The one resource this server protects (RFC 8707 / RFC 9728 `resource`): its MCP endpoint."""
    return public_base(request_base) + MCP_PATH


def oauth_resource_allowed(value: str, *, request_base: str) -> bool:
    """A resource indicator naming this server's /mcp (with or without the trailing slash clients sometimes add)."""
    resource = oauth_resource(request_base)
    return value in (resource, resource + "/")


class AtriumOAuth2Validator(OAuth2Validator):
    """DOT's validator with Atrium's two additions:

    - the audience rule's last line: no code without a resource. The consent view (panel/views/oauth.py) binds a
      request that named none to /mcp and refuses one naming anything else, both before the person is asked and
      again when the form comes back; a code reaching here unbound is refused all the same;
    - the grant a code and its tokens belong to: the consent view names the grant it just made
      (`atrium_grant_id`, passed as a credential, which oauthlib sets on its request); the code is bound to it
      here, and when the code is exchanged, the refresh-token family the exchange starts is bound to it too."""

    def save_authorization_code(self, client_id: str, code: dict[str, Any], request: Any, *a: Any, **kw: Any) -> None:
        if not [r for r in (getattr(request, "resource", None) or []) if r]:
            raise CustomOAuth2Error(
                error="invalid_target",
                description="name this server's /mcp endpoint as the resource",
                state=getattr(request, "state", None),
            )
        grant_id = getattr(request, "atrium_grant_id", None)
        if grant_id is None:  # only the consent page issues codes: each one with the grant it approved
            raise CustomOAuth2Error(
                error="access_denied",
                description="a person approves this client on the consent page",
                state=getattr(request, "state", None),
            )
        super().save_authorization_code(client_id, code, request, *a, **kw)
        issued = Grant.objects.get(code=code["code"], application=request.client)
        ApiToken.objects.filter(
            pk=grant_id, user_id=request.user.pk, oauth_application=request.client, revoked_at__isnull=True
        ).update(oauth_code=issued)

    def save_bearer_token(self, token: dict[str, Any], request: Any, *a: Any, **kw: Any) -> Any:
        """The toolkit saves the tokens; an exchanged code's grant then owns the refresh-token family they start
        (a refresh stays in its family, so nothing to bind then)."""
        with transaction.atomic():
            code = None
            if request.grant_type == "authorization_code":
                code = Grant.objects.filter(code=request.code, application=request.client).first()
            saved = super().save_bearer_token(token, request, *a, **kw)
            if code is not None and token.get("refresh_token"):
                family = (
                    RefreshToken.objects.filter(token_checksum=_checksum(token["refresh_token"]))
                    .values_list("token_family", flat=True)
                    .first()
                )
                ApiToken.objects.filter(oauth_code=code, oauth_token_family__isnull=True).update(
                    oauth_token_family=family
                )
        return saved


def _checksum(raw: str) -> str:
    """How the toolkit finds a token by its value (its token_checksum column)."""
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def _write_granted(scopes: list[str] | str) -> bool:
    names = scopes.split() if isinstance(scopes, str) else scopes
    return WRITE_SCOPE in names


def oauth_grant_approve(
    *, user: AbstractBaseUser, application: Application, scopes: list[str], project: str | None, actor: Actor
) -> ApiToken:
    """The person approved `application` for `scopes` on the consent page: a new grant (an ApiToken row tied to the
    client), beside any earlier grant of the same client (another device keeps its own). `project` (a git origin,
    optional) is the grant's default project, checked for membership as a personal token's is."""
    scope = "write" if _write_granted(scopes) else "read"
    grant, _ = token_create(
        user=user,
        label=f"{application.name or application.client_id}"[:92] + " (OAuth)",
        scope=scope,
        project=project or None,
        actor=actor,
        oauth_application_id=application.pk,
    )
    return grant


def oauth_token_verify(
    raw: str, *, resources: tuple[str, ...], now: datetime | None = None
) -> tuple[ApiToken, list[str]] | None:
    """The grant an OAuth access token acts through, with the scopes it carries ("read", and "write" when both the
    token and the grant allow it), or None: unknown, expired, for another resource (or for none), a user no longer
    active, or a grant that was revoked."""
    if not raw or len(raw) > 400:
        return None
    moment = now or timezone.now()
    rows = list(AccessToken.objects.select_related("user").filter(token_checksum=_checksum(raw))[:1])
    access = rows[0] if rows else None
    if access is None or access.expires <= moment or access.user is None or not access.user.is_active:
        return None
    if not access.resource or not any(access.allows_audience(r) for r in resources):
        return None
    # The grant whose family this token's refresh token is in (a token with none belongs to no grant).
    family = RefreshToken.objects.filter(access_token_id=access.pk).values("token_family")
    grants = list(
        ApiToken.objects.select_related("user").filter(
            oauth_token_family__in=family,
            user_id=access.user_id,
            oauth_application_id=access.application_id,
            revoked_at__isnull=True,
        )[:1]
    )
    grant = grants[0] if grants else None
    if grant is None or not grant.is_usable(moment):
        return None
    if grant.last_used_at is None or moment - grant.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=grant.pk).update(last_used_at=moment)
        grant.last_used_at = moment
    scopes = ["read"]
    if _write_granted(access.scope) and grant.can_write:
        scopes.append("write")
    return grant, scopes


def oauth_registrations_expire(*, now: datetime | None = None) -> int:
    """Delete dynamically registered clients that never got a grant within ATRIUM_OAUTH_UNUSED_REGISTRATION_HOURS
    (their registration tokens go with them). Returns how many."""
    cutoff = (now or timezone.now()) - timedelta(hours=settings.ATRIUM_OAUTH_UNUSED_REGISTRATION_HOURS)
    granted = ApiToken.objects.filter(oauth_application__isnull=False).values("oauth_application_id")
    stale = Application.objects.filter(
        registration_source=Application.RegistrationSource.DCR, created__lt=cutoff
    ).exclude(pk__in=granted)
    count, _ = stale.delete()
    return count


def oauth_grants_end(*, now: datetime | None = None) -> int:
    """Revoke the grants whose sign-in is over: no code waiting to be exchanged and no live refresh token in their
    family (it ran out, was revoked by the client, or a replay ended the family), so the Tokens page does not list
    as active a grant nothing can use again. Each gets its op row (token.revoke, by this job, with the reason).
    A grant younger than an hour is left alone (its code may be in the middle of its exchange). Returns how many."""
    moment = now or timezone.now()
    live = RefreshToken.objects.filter(revoked__isnull=True, token_family__isnull=False).values("token_family")
    ended = (
        ApiToken.objects.filter(
            oauth_application__isnull=False,
            revoked_at__isnull=True,
            oauth_code__isnull=True,
            created_at__lt=moment - timedelta(hours=1),
        )
        .exclude(oauth_token_family__in=live)
        .values_list("pk", flat=True)
    )
    actor = Actor.for_system("oauth_tokens_clear")
    count = 0
    for pk in list(ended):
        token_revoke(token_id=pk, user=None, actor=actor, reason="its client's sign-in ended: no live code or token")
        count += 1
    return count


def oauth_tokens_clear() -> dict[str, int]:
    """The beat's daily clean-up (accounts/tasks.py, migration 0008): the toolkit's own `cleartokens`
    (clear_expired: codes and access tokens past their expiry, refresh tokens idle longer than
    ATRIUM_OAUTH_REFRESH_TOKEN_DAYS after their access token ran out, revoked ones too once that long has passed,
    since reuse detection needs them until then), then the grants that leaves with nothing live, then unused
    registrations. Returns how many rows of each went."""
    models = {"codes": Grant, "access_tokens": AccessToken, "refresh_tokens": RefreshToken}
    before = {name: model.objects.count() for name, model in models.items()}
    clear_expired()
    removed = {name: before[name] - model.objects.count() for name, model in models.items()}
    removed["grants_ended"] = oauth_grants_end()
    removed["registrations"] = oauth_registrations_expire()
    return removed


class ThrottledRegistration:
    """DOT's permission hook for RFC 7591 registration: open to anyone (a client registers before a person signs
    in), at most ATRIUM_OAUTH_REGISTRATIONS_PER_HOUR an hour across all clients, so the table stays bounded. Stale
    registrations are cleared first, so the bound counts live ones."""

    def has_permission(self, request: HttpRequest) -> bool:
        now = timezone.now()
        oauth_registrations_expire(now=now)
        recent = Application.objects.filter(
            registration_source=Application.RegistrationSource.DCR, created__gte=now - timedelta(hours=1)
        ).count()
        return recent < settings.ATRIUM_OAUTH_REGISTRATIONS_PER_HOUR
