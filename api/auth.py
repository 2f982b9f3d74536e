"""Who is calling the REST API: a browser session (with CSRF) or a bearer token. Never a request field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.http import HttpRequest
from ninja.security import HttpBearer, SessionAuth

from api.tokens import token_verify
from palace.actors import Actor
from palace.errors import PermissionDenied

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from api.models import ApiToken


@dataclass(frozen=True)
class Caller:
    user: AbstractBaseUser
    token: ApiToken | None = None

    @property
    def actor(self) -> Actor:
        if self.token is not None:
            return Actor.for_token(self.user, self.token.pk, self.token.label)
        return Actor.for_user(self.user)

    @property
    def can_write(self) -> bool:
        return self.token is None or self.token.can_write

    @property
    def via(self) -> str:
        return "token" if self.token is not None else "session"

    def require_write(self) -> None:
        if not self.can_write:
            raise PermissionDenied("this token has the read scope; create a write token to change memories")


class TokenAuth(HttpBearer):
    openapi_scheme = "bearer"

    def authenticate(self, request: HttpRequest, token: str) -> Caller | None:
        row = token_verify(token)
        return None if row is None else Caller(user=row.user, token=row)


class BrowserSessionAuth(SessionAuth):
    """Django session login; unsafe methods also need the CSRF token (ninja checks it)."""

    def authenticate(self, request: HttpRequest, key: str | None) -> Caller | None:
        user: Any = getattr(request, "user", None)
        if user is not None and user.is_authenticated and user.is_active:
            return Caller(user=user)
        return None


def caller_of(request: HttpRequest) -> Caller:
    auth = getattr(request, "auth", None)
    if not isinstance(auth, Caller):
        raise PermissionDenied("not authenticated")
    return auth


AUTH = [TokenAuth(), BrowserSessionAuth()]
