from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path, re_path

from api import oauth
from api.api import api, path_not_found
from panel.views.oauth import ConsentView


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness only: the process answers. Real figures are at /api/v1/health."""
    return JsonResponse({"alive": True})


# OAuth for /mcp: the client's endpoints (api/oauth.py) and the consent page (panel/views/oauth.py), in the namespace
# django-oauth-toolkit reverses its endpoints in (the authorization server metadata names them).
oauth_patterns = [path("oauth/authorize/", ConsentView.as_view(), name="authorize"), *oauth.patterns()]

urlpatterns = [
    path("healthz", healthz),
    path("", include((oauth_patterns, "oauth2_provider"))),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    re_path(r"^api/v1/(?P<rest>.*)$", path_not_found),
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include("panel.urls")),
]

# The panel's frame for errors (navigation, the page's language); 500 without the database.
handler404 = "panel.views.errors.not_found"
handler500 = "panel.views.errors.server_error"
