from __future__ import annotations

from django.apps import AppConfig


class PanelConfig(AppConfig):
    name = "panel"
    verbose_name = "Panel"
    default_auto_field = "django.db.models.BigAutoField"
