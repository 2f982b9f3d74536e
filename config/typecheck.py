"""Settings for the type checker: django-stubs imports settings to learn the installed apps and models.

The same settings, pointed at a database URL that is never connected to, so a `mypy` run does not start (and then
leave running) the embedded PostgreSQL.
"""

import os

os.environ.setdefault("DATABASE_URL", "postgresql://typecheck@localhost/typecheck")

from config.settings import *  # noqa: F403
