"""Small request middleware: a request id that op-log rows carry, so one request's writes can be traced; a clear 503
while the database is unreachable; the acting context of row-level security for the logged-in user
(palace/rls.py)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

from palace import rls
from palace.oplog import request_id_var

logger = logging.getLogger(__name__)


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        rid = request.headers.get("X-Request-Id", "")[:64] or uuid.uuid4().hex
        token = request_id_var.set(rid)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response["X-Request-Id"] = rid
        return response


DATABASE_DOWN_MESSAGE = "The database is unreachable; Atrium is retrying. Try again in a few seconds."
RETRY_AFTER_SECONDS = "5"


class DatabaseUnavailableMiddleware:
    """A lost database answers 503 with a clear message instead of a 500 traceback page.

    PostgreSQL restarting (or a failover) makes queries raise `OperationalError` / `InterfaceError`; the next request
    opens a new connection (`CONN_HEALTH_CHECKS` replaces a kept one that died), so Atrium recovers without a
    restart. `/api/` gets the REST error body (JSON), the panel and admin a plain page that renders no template
    (templates would touch the session, and so the database). `/mcp` does not pass through Django: config/asgi.py
    answers it the same way.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        logger.warning("database unavailable on %s %s: %s", request.method, request.path, exception)
        return database_unavailable_response(api=request.path.startswith("/api/"))


class ActingUserMiddleware:
    """Row-level security's acting context for the request, from the session that AuthenticationMiddleware resolved:
    the logged-in person (panel, REST with a session), the system for staff in the Django admin (the admin lists
    every palace; which staff may do what there is the admin's own permissions). A bearer token on a REST call
    replaces it with the token's user inside this scope (api/auth.py). No session: no context, every palace-scoped
    table looks empty. Whatever was set is undone when the response is built, so a reused connection keeps nothing.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with rls.scope():
            # A bearer request's caller is its token (api/auth.py): its session is not even loaded for this.
            bearer = request.headers.get("Authorization", "").lower().startswith("bearer ")
            try:
                user = None if bearer else getattr(request, "user", None)
                known = user is not None and user.is_authenticated and user.is_active
            except (OperationalError, InterfaceError) as exc:  # the session's user is read from the database
                logger.warning("database unavailable on %s %s: %s", request.method, request.path, exc)
                return database_unavailable_response(api=request.path.startswith("/api/"))
            if known and user is not None:
                if user.is_staff and request.path_info.startswith(admin_prefix()):
                    rls.enter_as_system(f"admin:{user.get_username()}")
                else:
                    rls.enter_as(user)
            return self.get_response(request)


def admin_prefix() -> str:
    from django.urls import reverse

    return reverse("admin:index")


def database_unavailable_response(*, api: bool) -> HttpResponse:
    response: HttpResponse
    if api:
        body = {"error": {"code": "database_unavailable", "message": DATABASE_DOWN_MESSAGE}}
        response = JsonResponse(body, status=503)
    else:
        page = (
            "<!doctype html><html><head><meta charset='utf-8'><title>Atrium: database unavailable</title></head>"
            f"<body><h1>Service unavailable</h1><p>{DATABASE_DOWN_MESSAGE}</p></body></html>"
        )
        response = HttpResponse(page, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = RETRY_AFTER_SECONDS
    response["Cache-Control"] = "no-store"
    return response
