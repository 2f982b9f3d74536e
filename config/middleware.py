"""Small request middleware: a request id that op-log rows carry, so one request's writes can be traced, and a
clear 503 while the database is unreachable."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

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
