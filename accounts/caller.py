"""Who is acting: a user, and the API token they came through (None for a browser session). Never a request field.

REST (api/auth.py), MCP (api/mcp/runner.py) and the panel build a `Caller` only from a verified token or a
logged-in session; services receive its `actor`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from palace.actors import Actor
from palace.errors import NotFound, PermissionDenied
from palace.models import Palace
from palace.selectors import palace_get

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

    def default_project(self) -> Palace | None:
        """The token's default project, while the user still belongs to it (else None: never someone else's)."""
        if self.token is None or self.token.default_project_id is None:
            return None
        try:
            return palace_get(user=self.user, palace_id=self.token.default_project_id)
        except NotFound:
            return None

    def require_write(self) -> None:
        if not self.can_write:
            raise PermissionDenied("this token has the read scope; create a write token to change memories")
