"""System checks for Atrium's configuration, so `atrium check` names every bad variable at once.

config/settings.py never stops at a bad value: it records the problem (and uses the default), and this check
reports each one with a stable id. The entry points (config/prepare.py) refuse to start while there are any.

| id | problem |
|---|---|
| atrium.E001 | not true or false |
| atrium.E002 | not an integer |
| atrium.E003 | an integer below its minimum |
| atrium.E004 | not a number |
| atrium.E005 | a number outside its range |
| atrium.E006 | DATABASE_URL is not a postgresql:// URL |
| atrium.E007 | not one of the allowed values |
| atrium.E008 | a NAME_FILE that cannot be read |
| atrium.E009 | ATRIUM_TIME_ZONE is not a time zone |
| atrium.E010 | an ATRIUM_LLM_ALLOWED_HOSTS entry is not a host name, an address or a network |
| atrium.E011 | an LLM or embeddings endpoint that is not http(s), or carries userinfo, a query or a fragment |
| atrium.W001 | the database role is a superuser or has BYPASSRLS: row-level security is off (database check) |
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks


def configuration_errors() -> list[checks.CheckMessage]:
    """One error per bad variable, in the order settings.py read them (needs the settings, not the app registry)."""
    return [
        checks.Error(message, obj=name, id=check_id) for check_id, name, message in settings.ATRIUM_CONFIGURATION_ERRORS
    ]


@checks.register("atrium")
def check_configuration(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    return configuration_errors()


def _role_flags(alias: str) -> tuple[str, bool, bool]:
    from django.db import connections

    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
        name, superuser, bypass = cursor.fetchone()
    return str(name), bool(superuser), bool(bypass)


@checks.register(checks.Tags.database)
def check_database_role(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Row-level security (palace/rls.py) binds only a role that is neither superuser nor BYPASSRLS: against such a
    role every palace would still be isolated by the application's own filters, but not by the database. Runs with
    `atrium migrate` and `atrium check --database default`."""
    found: list[checks.CheckMessage] = []
    for alias in databases or []:
        name, superuser, bypass = _role_flags(alias)
        if superuser or bypass:
            found.append(
                checks.Warning(
                    f"the database role {name!r} is {'a superuser' if superuser else 'BYPASSRLS'}: PostgreSQL skips "
                    "row-level security for it, so tenant isolation rests on the application's filters alone",
                    hint="connect as a role without SUPERUSER and BYPASSRLS that owns the database (README: Isolation)",
                    obj=alias,
                    id="atrium.W001",
                )
            )
    return found
