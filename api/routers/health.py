from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest
from ninja import Router

from accounts.tokens import token_verify
from ops.health import health_cached, public_report

router = Router(tags=["health"])


def _is_staff(request: HttpRequest) -> bool:
    """A staff user behind a browser session or a bearer token (the same checks as the rest of the API)."""
    header = request.headers.get("Authorization", "")
    if header[:7].lower() == "bearer ":
        row = token_verify(header[7:].strip())
        return row is not None and bool(row.user.is_staff)
    user: Any = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)


@router.get("", auth=None)
async def health(request: HttpRequest) -> dict[str, Any]:
    """Measured health of every part, at most a few seconds old. `ok` is true, false, or null (unknown).

    Anyone gets the overall `status` and each part's `ok`; versions, pending migrations, worker names, memory
    counts and reasons need a staff session or a staff user's token. The measurement runs off the server's shared
    sync thread (it waits up to a second for the worker ping), and one measurement serves a burst of callers.
    """
    report = await sync_to_async(health_cached, thread_sensitive=False)()
    if await sync_to_async(_is_staff)(request):
        return report
    return public_report(report)
