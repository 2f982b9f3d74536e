"""Where Atrium may send a request: the one rule for every outbound URL (the judge, the chat model behind
distillation, entity extraction and query rewriting, and an embeddings endpoint).

1. The URL is `http(s)://host[:port][/path]`: no userinfo (credentials in a URL end up in logs and the op log), no
   query and no fragment (a typed `?` or `#` turns the path Atrium appends into a parameter, so the URL could
   address any path on the host).
2. The host is resolved once, and every address it resolves to must be a public one: loopback, link-local (the
   cloud metadata service at 169.254.169.254), private (RFC 1918), unique-local (fc00::/7), unspecified,
   multicast and the other special-purpose ranges (`ipaddress`'s IANA registries: not `is_global`) are refused,
   also when they hide inside an IPv6 address (::ffff:10.0.0.1, 64:ff9b::, 2002::/16), unless the operator's
   allow-list `ATRIUM_LLM_ALLOWED_HOSTS` names the host, the address or a network containing it. A local model
   server (Ollama on the same machine, a vLLM on the LAN) is a deliberate choice of the operator, never of
   whoever can type a URL into the judge's settings.
3. The request goes to the address that was checked, never to a second answer from DNS (rebinding): the URL
   carries the address, the `Host` header carries the name, and for https the name is the TLS server name that the
   certificate is verified against (httpx's documented `sni_hostname` request extension). Nothing here resolves
   the name again, and redirects are not followed by the callers.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import time
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

type IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
type IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_UNIQUE_LOCAL = ipaddress.IPv6Network("fc00::/7")


class EgressError(Exception):
    """An outbound URL that cannot be called; the message names the URL's host and why, never a secret."""


class EgressRefused(EgressError):
    """The URL's form, or an address its host resolves to, is not one Atrium sends requests to."""


class ReplyTooLarge(Exception):
    """The reply passed its size bound."""


class ReplyTooSlow(Exception):
    """The reply was not complete by its deadline."""


class EgressUnresolvable(EgressError):
    """The host does not resolve now (checked again at the next request)."""


@dataclass(frozen=True)
class Destination:
    """A checked base URL, bound to the address it was checked at."""

    url: str  # the base URL with the address in place of the host name (no trailing slash)
    host: str  # the Host header: the name (and port) as configured
    sni_hostname: str | None  # the TLS server name, when https and the host is a name
    address: str
    proxy: str | None  # the environment's proxy for the host as configured, None for a direct connection

    def request(self, path: str) -> dict[str, Any]:
        """Keyword arguments of an httpx request to `path` below the base URL."""
        extensions = {"sni_hostname": self.sni_hostname} if self.sni_hostname else {}
        return {"url": self.url + path, "headers": {"Host": self.host}, "extensions": extensions}


def egress_url_check(url: str) -> str:
    """The URL's form (step 1 of the module docstring), normalised without a trailing slash; EgressRefused
    otherwise. No network."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        _port = parts.port  # raises for a port out of range
    except ValueError as exc:
        raise EgressRefused(f"not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EgressRefused("the endpoint must be an http:// or https:// URL with a host")
    if "@" in parts.netloc:
        raise EgressRefused("the endpoint must not carry a user name or password (user:pass@); use the API key")
    if "?" in url or "#" in url:
        raise EgressRefused("the endpoint must not have a query (?…) or a fragment (#…): give the base URL, e.g. "
                            "https://api.example.com/v1")  # fmt: skip
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise EgressRefused("the endpoint must not contain spaces or control characters")
    return url.rstrip("/")


def _ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])  # a scoped IPv6 (fe80::1%eth0) is still link-local
    except ValueError:
        return None


def _embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, NAT64, 6to4): a way round a check on the outer address."""
    if isinstance(ip, ipaddress.IPv4Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.sixtofour


def address_kind(ip: IPAddress) -> str:
    """What kind of non-public address `ip` is ("loopback", "link-local", …), or "" for a public one."""
    inner = _embedded_ipv4(ip)
    if inner is not None:
        kind = address_kind(inner)
        return f"{kind} (inside {ip})" if kind else ""
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if isinstance(ip, ipaddress.IPv6Address) and ip in _UNIQUE_LOCAL:
        return "unique-local"
    if ip.is_multicast:
        return "multicast"
    if ip.is_private:
        return "private"
    if not ip.is_global:
        return "special-purpose"
    return ""


def allowed_hosts(setting: str = "ATRIUM_LLM_ALLOWED_HOSTS") -> tuple[frozenset[str], tuple[IPNetwork, ...]]:
    """An allow-list setting (ATRIUM_LLM_ALLOWED_HOSTS unless named) as names and networks (an address is a network
    of one). config/settings.py has validated the entries; one that is neither an address nor a network is a name."""
    names: set[str] = set()
    networks: list[IPNetwork] = []
    for entry in getattr(settings, setting):
        text = entry.strip().lower().removeprefix("[").removesuffix("]")
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError:
            names.add(text.rstrip("."))
    return frozenset(names), tuple(networks)


def _resolve(host: str, port: int) -> list[IPAddress]:
    literal = _ip(host)
    if literal is not None:
        return [literal]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise EgressUnresolvable(f"{host} does not resolve ({type(exc).__name__})") from None
    found: list[IPAddress] = []
    for info in infos:
        ip = _ip(str(info[4][0]))
        if ip is not None and ip not in found:
            found.append(ip)
    if not found:
        raise EgressUnresolvable(f"{host} does not resolve to an address")
    return found


def egress_proxy(url: str) -> str | None:
    """The environment's proxy (HTTP(S)_PROXY, ALL_PROXY, less NO_PROXY) for `url`'s configured host.

    A request names the checked address, so httpx could no longer match NO_PROXY against the name: the callers
    turn httpx's own environment lookup off and pass this instead (the proxy then connects to the address)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".")
    if urllib.request.proxy_bypass_environment(host):  # type: ignore[attr-defined]  # in the module, not in typeshed
        return None
    proxies = urllib.request.getproxies_environment()
    return proxies.get(parts.scheme) or proxies.get("all") or None


def egress_resolve(url: str, *, allow_list: str = "ATRIUM_LLM_ALLOWED_HOSTS") -> Destination:
    """Check `url` (the module docstring, steps 1-2) and bind it to the first address its host resolves to.
    `allow_list` names the operator's setting that may allow an internal host (the OAuth client metadata fetch has
    its own, ATRIUM_OAUTH_CIMD_ALLOWED_HOSTS). Raises EgressRefused or EgressUnresolvable."""
    url = egress_url_check(url)
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    addresses = _resolve(host, port)
    names, networks = allowed_hosts(allow_list)
    if host not in names:
        for ip in addresses:
            kind = address_kind(ip)
            if kind and not any(ip.version == net.version and ip in net for net in networks):
                shown = host if str(ip) == host else f"{host} ({ip})"
                raise EgressRefused(f"refused: {shown} is a {kind} address; name it in {allow_list} to allow it")
    address = addresses[0]
    literal = f"[{address}]" if address.version == 6 else str(address)
    netloc = literal + (f":{parts.port}" if parts.port else "")
    named_host = parts.netloc.rsplit("@", 1)[-1].lower()
    return Destination(
        url=f"{parts.scheme}://{netloc}{parts.path}".rstrip("/"),
        host=named_host,
        sni_hostname=host if parts.scheme == "https" and _ip(host) is None else None,
        address=str(address),
        proxy=egress_proxy(url),
    )


def egress_check(url: str) -> str:
    """What a settings form checks before saving an endpoint: the URL's form and, when the host resolves now, its
    addresses (EgressRefused with a message for the person). A host that does not resolve yet passes: every
    request checks again (egress_resolve). Returns the normalised URL."""
    url = egress_url_check(url)
    with contextlib.suppress(EgressUnresolvable):
        egress_resolve(url)
    return url


def read_bounded(chunks: Iterable[bytes], *, limit: int, deadline: float) -> bytes:
    """A streamed reply's body, at most `limit` bytes and complete by `deadline` (time.monotonic()). httpx's timeout
    bounds each read, not the whole reply: a server that trickles a byte a second would otherwise hold the caller as
    long as it likes. Raises ReplyTooLarge or ReplyTooSlow; the caller words the error for its own reader."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            raise ReplyTooLarge(f"reply larger than {limit} bytes")
        if time.monotonic() > deadline:
            raise ReplyTooSlow("no complete reply in time")
    return b"".join(parts)
