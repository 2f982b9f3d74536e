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
