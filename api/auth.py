"""Who is calling the REST API: a browser session (with CSRF) or a bearer token. Never a request field."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja.security import HttpBearer, SessionAuth

from accounts.caller import Caller
from accounts.tokens import token_verify
from palace import rls
from palace.errors import PermissionDenied


class TokenAuth(HttpBearer):
    openapi_scheme = "bearer"

    def authenticate(self, request: HttpRequest, token: str) -> Caller | None:
        row = token_verify(token)
        if row is None:
            return None
        rls.enter_as(row.user)  # until the request ends (config.middleware.ActingUserMiddleware's scope)
        return Caller(user=row.user, token=row)


class BrowserSessionAuth(SessionAuth):
    """Django session login; unsafe methods also need the CSRF token (ninja checks it)."""

    def authenticate(self, request: HttpRequest, key: str | None) -> Caller | None:
        user: Any = getattr(request, "user", None)
        if user is not None and user.is_authenticated and user.is_active:
            rls.enter_as(user)  # already so from the middleware, unless the request also sent a bearer token
            return Caller(user=user)
        return None


def caller_of(request: HttpRequest) -> Caller:
    auth = getattr(request, "auth", None)
    if not isinstance(auth, Caller):
        raise PermissionDenied("not authenticated")
    return auth


AUTH = [TokenAuth(), BrowserSessionAuth()]
