"""Database URLs to DATABASES entries: DATABASE_URL and DATABASE_REPLICA_URLS (pure: settings.py calls it, starts
nothing).

Which queries go to them is config/dbrouter.py; how to run them is deploy/SCALING.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

REPLICA_PREFIX = "replica_"


def database_from_url(url: str, *, conn_max_age: int, session_options: str = "") -> dict[str, object]:
    """Django's DATABASES entry for a postgresql:// URL (ValueError for any other scheme); `session_options` is
    added to any `options` the URL carries."""
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ValueError(f"must be a postgresql:// URL, not {parts.scheme}://")
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    if session_options:
        query["options"] = f"{query.get('options', '')} {session_options}".strip()
    host = query.pop("host", "") or (unquote(parts.hostname) if parts.hostname else "")
    port = query.pop("port", "") or (str(parts.port) if parts.port else "")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")) or "atrium",
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": port,
        "CONN_MAX_AGE": conn_max_age,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": query,
    }


def replica_databases(
    urls: list[str], *, options: dict[str, Any], problem: Callable[[str, str, str], None]
) -> dict[str, dict[str, object]]:
    """{"replica_1": entry, "replica_2": entry, ...} for each postgresql:// URL, parsed like DATABASE_URL with the
    primary's `options`; a bad URL is reported (atrium.E006) and left out, and Atrium refuses to start while there is
    one (config/prepare.py), rather than run without a replica it was given.

    Each entry is a test MIRROR of the primary: a test run never creates, migrates or flushes a database on a
    standby (it is read-only); the suite's replica tests start a real standby of their own (tests/config/)."""
    entries: dict[str, dict[str, object]] = {}
    for number, url in enumerate(urls, start=1):
        try:
            entry = database_from_url(url, **options)
        except ValueError as exc:
            problem("atrium.E006", "DATABASE_REPLICA_URLS", f"replica {number}: {exc}")
            continue
        entry["TEST"] = {"MIRROR": "default"}
        entries[f"{REPLICA_PREFIX}{number}"] = entry
    return entries
