from __future__ import annotations

from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class PalaceConfig(AppConfig):
    name = "palace"
    verbose_name = "Palaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from palace import rls  # noqa: F401 - connects the acting context to every new database connection


class AtriumAdminConfig(admin_apps.AdminConfig):
    """Django's admin with the audited site as the default `admin.site` (palace/admin_site.py): every model
    registered there, by any app, writes the op log with the staff member and their reason."""

    default = False  # named in INSTALLED_APPS; `palace` itself stays PalaceConfig
    default_site = "palace.admin_site.AuditedAdminSite"
