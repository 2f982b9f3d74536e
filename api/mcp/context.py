"""Who is calling an MCP tool: always the verified bearer token, never an argument.

`get_access_token()` reads the token the SDK's auth middleware verified for this HTTP request; the token row is
loaded again here (one indexed query) so that a token revoked between verification and the call still fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async
from django.utils import timezone
from mcp.server.auth.middleware.auth_context import get_access_token

from accounts.caller import Caller
from accounts.models import ApiToken
from palace.errors import NotFound, PermissionDenied
from palace.selectors import palace_get

if TYPE_CHECKING:
    from palace.models import Palace


class Unauthenticated(PermissionDenied):
    """No verified token on this request (cannot happen behind the SDK's auth middleware; kept as a guard)."""


def token_scopes() -> frozenset[str]:
    """The scopes of the verified token on this request (empty when there is none)."""
    token = get_access_token()
    return frozenset() if token is None else frozenset(token.scopes)


def load_caller(token_id: int) -> Caller:
    """The caller for a verified token id (sync: runs on the ORM thread).

    The row the verifier loaded for this very request is reused; otherwise it is loaded (and checked) again.
    """
    from api.mcp.server import verified_token

    row = verified_token.get()
    if row is not None and row.pk == token_id:
        return Caller(user=row.user, token=row)
    row = ApiToken.objects.select_related("user").filter(pk=token_id).first()
    if row is None or not row.is_usable(timezone.now()) or not row.user.is_active:
        raise Unauthenticated("this token is no longer valid; create a new one with `atrium token create`")
    return Caller(user=row.user, token=row)


def current_token_id() -> int:
    """The ApiToken id of the bearer token the SDK verified for this request."""
    token = get_access_token()
    claims = (token.claims or {}) if token is not None else {}
    token_id = claims.get("token_id")
    if token is None or not isinstance(token_id, int):
        raise Unauthenticated("not authenticated: send Authorization: Bearer <token>")
    return token_id


async def current_caller() -> Caller:
    """The user and token behind this MCP request."""
    return await sync_to_async(load_caller)(current_token_id())


def palace_for(caller: Caller, *, project: str | None, write: bool = False) -> Palace:
    """The palace a tool addresses: the named project (membership checked) or the caller's personal palace.

    A project the caller is not a member of raises NotFound exactly like one that does not exist.
    """
    if project is not None and not project.strip():
        project = None
    try:
        return palace_get(user=caller.user, origin=project, write=write)
    except NotFound:
        if project is None:
            raise NotFound("your personal palace was not found; ask an admin to check your account") from None
        raise NotFound(
            f"project not found: {project!r}. Pass the git origin of a project you are a member of "
            "(e.g. github.com/org/repo), or omit `project` to use your personal palace."
        ) from None
