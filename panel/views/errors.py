"""The panel's own 404 and 500 pages (config/urls.py handler404/handler500), and /favicon.ico.

404 is the panel's frame with its navigation for a signed-in user, in the page's language (LocaleMiddleware has
chosen it by then). 500 must not need the database, which may be why it happened: the template is rendered without
the request (no session, no user, no scope), like Django's own, and lists the pages as plain links."""

from __future__ import annotations

import logging

from django.contrib.staticfiles import finders
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseServerError
from django.template import loader
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET

from panel.frame import page
from panel.scope import scope_for

logger = logging.getLogger(__name__)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.user.is_authenticated:
        try:
            return page(request, "404.html", {}, scope=scope_for(request), nav="", status=404)
        except Exception:  # a 404 must never become a 500: without the scope, the frame without navigation
            logger.exception("404 page without its navigation")
    return HttpResponse(loader.render_to_string("404.html", {}, request), status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    return HttpResponseServerError(loader.get_template("500.html").render())


@require_GET
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> FileResponse:
    """Browsers ask for /favicon.ico on every site whatever the page links; served from static/ (whitenoise serves
    the linked /static/favicon.ico)."""
    found = finders.find("favicon.ico")
    if not found:
        raise Http404("no favicon")
    return FileResponse(open(str(found), "rb"), content_type="image/x-icon")
