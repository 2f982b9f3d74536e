"""The OAuth endpoints a client talks to (the consent page is the panel's: panel/views/oauth.py):

- RFC 9728 protected resource metadata at `/.well-known/oauth-protected-resource` and under the MCP path
  (`/.well-known/oauth-protected-resource/mcp`): the resource is this server's `/mcp`, its authorization server
  this server (accounts/oauth.py says how both are named);
- RFC 8414 authorization server metadata at `/.well-known/oauth-authorization-server`;
- the token endpoint (authorization code with PKCE, refresh), RFC 7009 revocation and RFC 7591 registration (with
  RFC 7592 management of a registration), all django-oauth-toolkit's views, configured in config/settings.py.

config/urls.py mounts `patterns()` in the `oauth2_provider` namespace, the one the toolkit reverses its endpoints in.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import URLPattern, path
from oauth2_provider import views as dot
from oauth2_provider.settings import oauth2_settings

from accounts.oauth import oauth_resource, public_base

__all__ = ["patterns", "request_base"]

PRM_PATH = ".well-known/oauth-protected-resource"


def request_base(request: HttpRequest) -> str:
    return f"{request.scheme}://{request.get_host()}"


def issuer(request: HttpRequest) -> str:
    """The authorization server's issuer: the same origin the RFC 8414 document names (the toolkit derives it from
    the request, or OIDC_ISS_ENDPOINT = ATRIUM_PUBLIC_URL)."""
    return oauth2_settings.OIDC_ISS_ENDPOINT or public_base(request_base(request))


class ProtectedResourceMetadata(dot.OAuthProtectedResourceMetadataView):
    """One protected resource, `/mcp`, whichever of the two metadata URLs is asked."""

    def get_resource(self, request: HttpRequest) -> str:
        return oauth_resource(request_base(request))

    def get_authorization_servers(self, request: HttpRequest) -> list[str]:
        return [issuer(request)]


def patterns() -> list[URLPattern]:
    resource_metadata: Any = ProtectedResourceMetadata.as_view()
    return [
        path(
            ".well-known/oauth-authorization-server",
            dot.OAuthServerMetadataView.as_view(),
            name="oauth-server-metadata",
        ),
        path(PRM_PATH, resource_metadata, name="oauth-resource-metadata"),
        path(f"{PRM_PATH}/mcp", resource_metadata, name="oauth-resource-metadata-mcp"),
        path("oauth/token/", dot.TokenView.as_view(), name="token"),
        path("oauth/revoke/", dot.RevokeTokenView.as_view(), name="revoke-token"),
        path("oauth/register/", dot.DynamicClientRegistrationView.as_view(), name="dcr-register"),
        path(
            "oauth/register/<str:client_id>/",
            dot.DynamicClientRegistrationManagementView.as_view(),
            name="dcr-register-management",
        ),
    ]
