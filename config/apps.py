from __future__ import annotations

from django.apps import AppConfig


class AtriumConfig(AppConfig):
    """`config` as an installed app only so that its system checks are registered when Django starts."""

    name = "config"
    verbose_name = "Atrium configuration"

    def ready(self) -> None:
        from config import (
            celery_app,  # noqa: F401  (tasks sent from this process use the configured broker)
            checks,  # noqa: F401  (registers the checks)
            dbrouter,  # noqa: F401  (watches the primary's writes for read-your-writes when replicas are set)
        )
