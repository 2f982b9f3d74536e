"""The frame every panel page shares: scope, due badge, navigation; partial rendering for htmx; error mapping."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext as _

from palace.actors import Actor
from palace.errors import AtriumError, NotFound
from panel import sources
from panel.scope import Scope

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


def due_badge(request: HttpRequest, scope: Scope) -> int | None:
    """Due-today count over the palaces in scope, or None when the review service cannot say."""
    try:
        return sources.review_due_count(user=request.user, palaces=scope.palaces, now=timezone.now())
    except sources.Unavailable:
        return None


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
    """Render `template`, or only its `partial` region for an htmx request."""
    context = {**context, "scope": scope}
    if partial is not None and is_partial(request):
        return render(request, f"{template}#{partial}", context, status=status)
    context.update(nav=nav, due_count=due_badge(request, scope))
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
        except sources.Unavailable as exc:
            return fragment_error(request, _("This part of Atrium is not available yet: %s") % exc, 503)

    return wrapped
