"""Who is acting: a user, and the API token they came through (None for a browser session). Never a request field.

REST (api/auth.py), MCP (api/mcp/runner.py) and the panel build a `Caller` only from a verified token or a
logged-in session; services receive its `actor`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from palace.actors import Actor
from palace.errors import PermissionDenied

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from accounts.models import ApiToken


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
