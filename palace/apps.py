from __future__ import annotations

from django.apps import AppConfig


class PalaceConfig(AppConfig):
    name = "palace"
    verbose_name = "Palaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from palace import rls  # noqa: F401 - connects the acting context to every new database connection
