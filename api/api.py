"""The one NinjaAPI: a router per domain, errors mapped once."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from api.auth import AUTH
from api.routers import (
    backfill,
    capture,
    distill,
    entities,
    episodes,
    export,
    facts,
    handoff,
    health,
    judge,
    memories,
    oplog,
    palace_structure,
    palaces,
    profile,
    review,
    search,
    stats,
    usersettings,
)
from palace.errors import AtriumError

api = NinjaAPI(
    title="Atrium",
    version="1",
    description="Long-term memory for AI agents, organised as a memory palace.",
    urls_namespace="api",
    auth=AUTH,
    docs_url="/docs",
    openapi_url="/openapi.json",
)


def error_body(
    api: NinjaAPI, request: HttpRequest, status: int, code: str, message: str, **extra: object
) -> HttpResponse:
    return api.create_response(request, {"error": {"code": code, "message": message, **extra}}, status=status)


@api.exception_handler(AtriumError)
def on_domain_error(request: HttpRequest, exc: AtriumError) -> HttpResponse:
    return error_body(api, request, exc.status, exc.code, exc.message, **exc.detail)


@api.exception_handler(AuthenticationError)
def on_unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = error_body(
        api,
        request,
        401,
        "unauthenticated",
        "send Authorization: Bearer <token> (create one with `atrium token create`) or log in",
    )
    response["WWW-Authenticate"] = 'Bearer realm="atrium"'
    return response


@api.exception_handler(ValidationError)
def on_invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    errors = [
        {"loc": [str(p) for p in e.get("loc", [])], "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
        for e in exc.errors
    ]
    first = errors[0] if errors else {"loc": [], "msg": "invalid input"}
    where = ".".join(first["loc"][1:] if len(first["loc"]) > 1 else first["loc"])
    return error_body(
        api, request, 422, "invalid", f"{where}: {first['msg']}" if where else str(first["msg"]), errors=errors
    )


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if exc.status_code == 400:  # ninja's "Cannot parse request body": invalid input like any other, a documented 422
        return error_body(api, request, 422, "invalid", f"the request body is not valid JSON ({exc})")
    return error_body(api, request, exc.status_code, "error", str(exc))


api.add_router("/health", health.router)
api.add_router("/capture", capture.router)
api.add_router("/backfill", backfill.router)
api.add_router("/palaces", palaces.router)
api.add_router("/memories", memories.router)
api.add_router("/oplog", oplog.router)
api.add_router("/palaces", palace_structure.router)
api.add_router("/review", review.router)
api.add_router("/stats", stats.router)
api.add_router("/search", search.router)
api.add_router("/distill", distill.router)
api.add_router("/entities", entities.router)
api.add_router("/facts", facts.router)
api.add_router("/episodes", episodes.router)
api.add_router("/export", export.router)
api.add_router("/import", export.import_router)
api.add_router("", profile.router)
api.add_router("", handoff.router)
api.add_router("", judge.router)
api.add_router("", usersettings.router)


@csrf_exempt  # it changes nothing; a POST to a wrong path gets the same JSON 404
def path_not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Any other path under /api/v1/ (an id that is not a number, a typo): the API's JSON 404, not the site's HTML
    page, so a client always gets the documented error shape."""
    return error_body(api, request, 404, "not_found", f"no such API path: {request.path}")
