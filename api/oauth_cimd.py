"""Client ID Metadata Documents: the fetch of a client's metadata from its client_id, an https URL.

django-oauth-toolkit does the protocol (oauth2_provider.cimd: only an https client_id with a path and no userinfo or
fragment is one; the document's client_id must equal its URL; a public client with redirect URIs; the resulting
client cached per the document's max-age and refreshed when stale; a failed URL backed off; at most a few fetches in
flight). Its CIMD_METADATA_FETCHER hook is where the request is made, and this fetcher makes it by Atrium's one rule
for outbound requests (memory.providers.egress): every address the host resolves to must be a public one unless the
operator names the host in ATRIUM_OAUTH_CIMD_ALLOWED_HOSTS, the request goes to the address that was checked (no
second DNS answer), no redirects; plus the document's limits: CIMD_FETCH_TIMEOUT_SECONDS for the whole reply,
CIMD_MAX_DOCUMENT_SIZE bytes, a JSON object. A refusal is a CIMDError: the toolkit treats the client as unknown.
"""

from __future__ import annotations

import functools
import json
import re
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

import httpx2
from oauth2_provider.cimd import CIMDError
from oauth2_provider.settings import oauth2_settings

from memory.providers import EgressError, ReplyTooLarge, ReplyTooSlow, egress_resolve, read_bounded

__all__ = ["EgressMetadataFetcher"]

ALLOW_LIST = "ATRIUM_OAUTH_CIMD_ALLOWED_HOSTS"
_MAX_AGE = re.compile(r"max-age\s*=\s*(\d+)", re.IGNORECASE)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # The system's trust store (SSL_CERT_FILE honoured), built once per process.
    return ssl.create_default_context()


def _max_age(cache_control: str) -> int:
    """How long the client is kept before its document is fetched again: the document's max-age within the
    toolkit's bounds; no-store / no-cache is the floor."""
    floor, ceiling = oauth2_settings.CIMD_METADATA_MIN_AGE_SECONDS, oauth2_settings.CIMD_METADATA_MAX_AGE_SECONDS
    lowered = cache_control.lower()
    match = _MAX_AGE.search(lowered)
    age = floor if ("no-store" in lowered or "no-cache" in lowered) else int(match.group(1)) if match else ceiling
    return max(floor, min(age, ceiling))


class EgressMetadataFetcher:
    """The toolkit's fetcher interface: `fetch(client_id)` -> (metadata, max-age seconds), or CIMDError."""

    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        parts = urlsplit(client_id)
        if parts.scheme != "https" or parts.query:  # the toolkit allows a query; the egress rule does not
            raise CIMDError("a client_id metadata URL must be https, without a query")
        if not parts.path or any(segment in (".", "..") for segment in parts.path.split("/")):
            raise CIMDError("a client_id metadata URL needs a path, without . or .. segments")
        try:
            destination = egress_resolve(client_id, allow_list=ALLOW_LIST)
        except EgressError as exc:
            raise CIMDError(f"client_id document refused: {exc}") from None
        request = destination.request("/" if client_id.endswith("/") else "")
        timeout = oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        headers = {**request["headers"], "Accept": "application/json"}
        try:
            with (
                httpx2.Client(
                    timeout=httpx2.Timeout(timeout),
                    verify=_ssl_context(),
                    follow_redirects=False,
                    trust_env=False,  # the proxy, if any, was chosen by the configured name (Destination.proxy)
                    proxy=destination.proxy,
                ) as client,
                client.stream("GET", request["url"], headers=headers, extensions=request["extensions"]) as response,
            ):
                body = self._read(response, deadline=time.monotonic() + timeout)
                cache_control = response.headers.get("Cache-Control", "")
        except httpx2.TimeoutException:
            raise CIMDError(f"client_id document: no reply within {timeout} s") from None
        except httpx2.TransportError as exc:
            raise CIMDError(f"client_id document: cannot reach the host ({type(exc).__name__})") from None
        try:
            document = json.loads(body)
        except ValueError:
            raise CIMDError("client_id document is not valid JSON") from None
        if not isinstance(document, dict):
            raise CIMDError("client_id document must be a JSON object")
        return document, _max_age(cache_control)

    @staticmethod
    def _read(response: Any, *, deadline: float) -> bytes:
        """The body within the size bound and the deadline (httpx's timeout is per read: a server that trickles
        bytes would otherwise hold the authorization request)."""
        if response.status_code != 200:
            raise CIMDError(f"client_id document answered HTTP {response.status_code}")
        media = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if media != "application/json" and not (media.startswith("application/") and media.endswith("+json")):
            raise CIMDError(f"client_id document is not JSON (Content-Type {media!r})")
        limit = oauth2_settings.CIMD_MAX_DOCUMENT_SIZE
        try:
            return read_bounded(response.iter_bytes(), limit=limit, deadline=deadline)
        except ReplyTooLarge:
            raise CIMDError(f"client_id document is larger than {limit} bytes") from None
        except ReplyTooSlow:
            raise CIMDError("client_id document: no complete reply in time") from None
