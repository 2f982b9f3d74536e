"""Git origins as palace keys: the ssh and https spellings of one repository are one project."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_SCP_LIKE = re.compile(r"^(?:(?P<user>[A-Za-z0-9._-]+)@)?(?P<host>[A-Za-z0-9.-]+):(?!//)(?P<path>[^\\]+)$")
# The key itself (`github.com/team/repo`), the spelling results and exports use: a host with a dot, then the path.
_BARE = re.compile(r"^(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)/(?P<path>[^\\:]+)$")
_HOST = re.compile(r"^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$")
_SEGMENT = re.compile(r"^[A-Za-z0-9._~+-]+$")
_SCHEMES = {"http", "https", "ssh", "git", "git+ssh", "ssh+git"}


class InvalidOrigin(ValueError):
    """The text is not a plausible git remote."""


def normalize_origin(raw: str) -> str:
    """Return `host/owner/repo` (lower-case host, no scheme, user, port or `.git`) for a git remote URL.

    `git@github.com:a/b.git`, `ssh://git@github.com:22/a/b`, `https://github.com/a/b/` all give `github.com/a/b`, and
    so does the key itself, `github.com/a/b` (the name a result gives a project palace).
    Paths keep their case: some forges treat it as significant.
    """
    text = (raw or "").strip()
    if not text or len(text) > 400 or any(ch.isspace() for ch in text):
        raise InvalidOrigin(
            "a git origin is a URL such as git@github.com:team/repo.git or https://github.com/team/repo"
        )
    match = _SCP_LIKE.match(text)
    if "://" in text:
        parts = urlsplit(text)
        if parts.scheme.lower() not in _SCHEMES:
            raise InvalidOrigin(f"unsupported scheme {parts.scheme!r}: use https, ssh or git")
        host, path = (parts.hostname or ""), parts.path
    elif match:
        host, path = match.group("host"), match.group("path")
    elif bare := _BARE.match(text):
        host, path = bare.group("host"), bare.group("path")
    else:
        raise InvalidOrigin(f"{raw!r} is not a git origin (expected host and repository path)")
    host = host.lower().rstrip(".")
    if not _HOST.match(host) or ("." not in host and host != "localhost"):
        raise InvalidOrigin(f"{host!r} is not a valid host name")
    path = path.strip("/")
    path = path.removesuffix(".git").rstrip("/")
    segments = [s for s in path.split("/") if s]
    if not segments or not all(_SEGMENT.match(s) and s not in {".", ".."} for s in segments):
        raise InvalidOrigin(f"{raw!r} has no repository path")
    if len(segments) < 2:
        raise InvalidOrigin(f"{raw!r} names no owner/repository")
    return f"{host}/{'/'.join(segments)}"
