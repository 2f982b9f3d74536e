"""The frame every panel page shares: scope, due badge, navigation; partial rendering for htmx; error mapping."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from palace.actors import Actor
from palace.errors import AtriumError, NotFound
from panel.scope import Scope
from review.selectors import review_due_count

View = Callable[..., HttpResponse]


def is_partial(request: HttpRequest) -> bool:
    """An htmx swap (not a boosted navigation) gets only the region it asked for."""
    htmx: Any = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request


def user_of(request: HttpRequest) -> AbstractBaseUser:
    """The logged-in user (views are behind @login_required)."""
    user = request.user
    assert isinstance(user, AbstractBaseUser)
    return user


def actor_of(request: HttpRequest) -> Actor:
    return Actor.for_user(user_of(request))


def due_badge(request: HttpRequest, scope: Scope) -> int:
    """Due-today count over the palaces in scope."""
    return review_due_count(user=request.user, palace_ids=scope.palace_ids, now=timezone.now())


def page(
    request: HttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    scope: Scope,
    nav: str,
    partial: str | None = None,
    status: int = 200,
) -> HttpResponse:
    """Render `template`, or only its `partial` region for an htmx request. A view that counted the reviews due
    already (Today's overview) puts `reviews_due` in the context, and the badge does not count them again."""
    context = {**context, "scope": scope}
    if partial is not None and is_partial(request):
        return render(request, f"{template}#{partial}", context, status=status)
    context["nav"] = nav
    if "reviews_due" not in context:
        context["reviews_due"] = due_badge(request, scope)
    return render(request, template, context, status=status)


def fragment_error(request: HttpRequest, message: str, status: int) -> HttpResponse:
    return render(request, "panel/_error.html", {"message": message, "status": status}, status=status)


def domain_errors(view: View) -> View:
    """Map the domain error hierarchy once for the panel: invisible = 404, viewer writing = 403, bad input = 422."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except NotFound as exc:
            raise Http404(exc.message) from exc
        except AtriumError as exc:
            return fragment_error(request, exc.message, exc.status)

    return wrapped
