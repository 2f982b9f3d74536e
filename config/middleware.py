"""Small request middleware: a request id that op-log rows carry, so one request's writes can be traced; the acting
context of row-level security for the logged-in user (palace/rls.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from palace import rls
from palace.oplog import request_id_var


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
            user = None if bearer else getattr(request, "user", None)
            if user is not None and user.is_authenticated and user.is_active:
                if user.is_staff and request.path_info.startswith(admin_prefix()):
                    rls.enter_as_system(f"admin:{user.get_username()}")
                else:
                    rls.enter_as(user)
            return self.get_response(request)


def admin_prefix() -> str:
    from django.urls import reverse

    return reverse("admin:index")
