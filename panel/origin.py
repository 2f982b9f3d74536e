"""Which pages may open the panel's websocket: only the panel's own origin — scheme, host and port exactly.

Channels' `AllowedHostsOriginValidator` accepts an Origin on any port of an allowed host, so a page served by
another program on the same machine (http://localhost:3000) could open the socket with the user's cookies (cookies
are not scoped by port) and read their live log. Here the Origin must be one of:

- the origin of the connection itself: `http://` + its Host header for `ws`, `https://` for `wss`, when that Host is
  in ALLOWED_HOSTS (the page was served by this server under that name);
- ATRIUM_PUBLIC_URL's origin (behind a TLS proxy the connection may arrive as plain `ws`);
- an entry of ATRIUM_ALLOWED_ORIGINS.

The comparison (scheme, host, port with defaults) is channels' own `OriginValidator.match_allowed_origin`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import OriginValidator
from django.conf import settings
from django.http.request import split_domain_port, validate_host


def _origin_of(url: str) -> str | None:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else None


def allowed_origins(scope: dict[str, Any]) -> list[str]:
    """The exact origins that may open this websocket connection."""
    allowed = [origin for origin in map(_origin_of, settings.ATRIUM_ALLOWED_ORIGINS) if origin]
    public = _origin_of(settings.ATRIUM_PUBLIC_URL or "")
    if public:
        allowed.append(public)
    host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1").lower()
    domain, _port = split_domain_port(host)
    if domain and validate_host(domain, settings.ALLOWED_HOSTS):
        allowed.append(f"{'https' if scope.get('scheme') == 'wss' else 'http'}://{host}")
    return allowed


class SameOriginValidator:
    """ASGI middleware: a websocket whose Origin is not one of `allowed_origins(scope)` is refused (403)."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        return await OriginValidator(self.application, allowed_origins(scope))(scope, receive, send)
