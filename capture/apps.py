from __future__ import annotations

from django.apps import AppConfig


class CaptureConfig(AppConfig):
    name = "capture"
    label = "capture"
    verbose_name = "Capture"
    default_auto_field = "django.db.models.BigAutoField"
