"""Who runs without the database session timeouts (ATRIUM_DB_STATEMENT_TIMEOUT, ATRIUM_DB_IDLE_IN_TRANSACTION_TIMEOUT).

The timeouts are libpq startup options on every connection (config/settings.py `session_timeouts`), which is right
for the web server: a request's statement or open transaction should not outlive the request by much. The Celery
worker's jobs (re-embedding, distillation, scheduled backup) and the `atrium` commands (migrate, which builds
indexes; import, export, restore, eval) are long by nature and are the operator's own acts: their processes drop
the options before their first connection (config/cli.py, config/celery.py). pg_dump and pg_restore set both
timeouts to 0 on their own connections already.
"""

from __future__ import annotations

from typing import Any


def lift_session_timeouts(databases: dict[str, Any], session_options: str) -> None:
    """Remove `session_options` from every entry's libpq `options`, in place (Django's connection handler holds
    these very dicts), and close connections already open so the next one starts without them."""
    from django.db import connections

    for alias, entry in databases.items():
        options = entry.setdefault("OPTIONS", {})
        rest = str(options.get("options", "")).replace(session_options, "").strip()
        if rest:
            options["options"] = rest
        else:
            options.pop("options", None)
        if alias in connections:
            connections[alias].close()
