"""`GET /api/v1/profile.txt`: the standing profile as plain text, for a client's session-start hook (bearer token).

The same text as the MCP tool `memory_profile` and the resource `atrium://profile`: wrapped in
`<atrium_memory_context>`, within the profile's token budget.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from ninja import Router

from api.auth import TokenAuth, caller_of
from api.schemas import ErrorOut
from memory.profile import profile_build
from palace.selectors import palace_get
from review.selectors import review_due_count

router = Router(tags=["profile"])


@router.get(
    "/profile.txt",
    auth=TokenAuth(),
    response={200: str, 401: ErrorOut, 404: ErrorOut},
    openapi_extra={
        "responses": {
            200: {"description": "the profile text", "content": {"text/plain": {"schema": {"type": "string"}}}}
        }
    },
)
def profile_text(request: HttpRequest) -> HttpResponse:
    """Your standing profile (personal palace): plain text for injection at session start."""
    caller = caller_of(request)
    palace = palace_get(user=caller.user)
    profile = profile_build(user=caller.user, palace_id=palace.pk, reviews_due=review_due_count(user=caller.user))
    response = HttpResponse(profile.text + "\n", content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "private, no-store"
    response["X-Atrium-Profile-Tokens"] = f"{profile.tokens:g}/{profile.budget}"
    return response
