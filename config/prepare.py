"""What every process does before Django connects, since importing the settings starts nothing.

1. Refuse a bad configuration: every problem the settings found, as the system check messages (config/checks.py).
2. With DATABASE_URL unset, start (or join) the embedded PostgreSQL under ATRIUM_HOME/pg, point Django at it, and
   export its URL, so that child processes (`atrium up`'s web server and worker) join this server.

Called by the `atrium` command (config/cli.py), the ASGI application (config/asgi.py) and the Celery app
(config/celery.py), so `uvicorn config.asgi:application` and `celery -A config worker` started by hand find the
embedded database like any command. The embedded Redis is started only by `atrium up` (and the test session): a
server or worker started by hand without REDIS_URL uses the socket of a running `atrium up`. The test plugin
(config/testing.py) starts throwaway servers of its own before the settings are read.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.core.checks import CheckMessage
from django.core.exceptions import ImproperlyConfigured

from config.checks import configuration_errors


class ConfigurationError(ImproperlyConfigured):
    def __init__(self, errors: list[CheckMessage]) -> None:
        self.errors = errors
        lines = "\n".join(f"  {error}" for error in errors)
        super().__init__(f"the configuration has {len(errors)} problem(s); fix them to start:\n{lines}")


def refuse_bad_configuration() -> None:
    errors = configuration_errors()
    if errors:
        raise ConfigurationError(errors)


def start_embedded_database() -> None:
    """Start or join the embedded PostgreSQL when no DATABASE_URL is set (and nothing has started it already)."""
    if os.environ.get("DATABASE_URL") or not settings.ATRIUM_EMBEDDED_POSTGRES:
        return
    from config.settings import database_from_url
    from ops.embedded import postgres_url

    url = postgres_url(settings.ATRIUM_HOME)
    os.environ.update(ATRIUM_HOME=str(settings.ATRIUM_HOME), DATABASE_URL=url, ATRIUM_EMBEDDED_POSTGRES="1")
    # In place: Django's connection handler holds this very dict (and may already have read it), but nothing has
    # connected yet, so the first connection goes to the server just started.
    settings.DATABASES["default"].update(
        database_from_url(
            url, conn_max_age=settings.ATRIUM_DB_CONN_MAX_AGE, session_options=settings.ATRIUM_DB_SESSION_OPTIONS
        )
    )


def prepare_process() -> None:
    """Both steps, for a server process (ASGI, Celery): a bad configuration stops it with every message."""
    refuse_bad_configuration()
    start_embedded_database()
