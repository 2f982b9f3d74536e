"""Per-user API tokens (only a hash is stored; the raw token is shown once at creation) and per-user settings."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone

TOKEN_PREFIX = "atr_"


class ApiToken(models.Model):
    class Scope(models.TextChoices):
        READ = "read"
        WRITE = "write"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    label = models.CharField(max_length=100)
    # The first characters of the raw token, enough to recognise it in a list; never enough to use it.
    prefix = models.CharField(max_length=16)
    key_hash = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.WRITE)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # The project an agent using this token works in, when it does not name one (the session-start profile and
    # bootstrap include that project's curated profile and handoff). Checked for membership when set and when used.
    default_project = models.ForeignKey(
        "palace.Palace", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Set for an OAuth grant (accounts/oauth.py): the client a person approved on the consent page. The row then
    # stands for that grant (its scope, default project, last use, revocation); the client's access tokens act
    # through it, and its own key is random and never shown, so it is no bearer token itself.
    oauth_application = models.ForeignKey(
        "oauth2_provider.Application", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # Which of the client's codes and tokens are this grant's: a person may approve one client on several devices,
    # each approval its own grant, revocable alone. The code issued with the approval, until the client exchanges
    # it (the toolkit then deletes it); from then on the toolkit's refresh-token family, which every rotation
    # inherits, so the access and refresh tokens the client holds lead back to this row.
    oauth_code = models.OneToOneField(
        "oauth2_provider.Grant", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    oauth_token_family = models.UUIDField(null=True, blank=True, unique=True)

    class Meta:
        verbose_name, verbose_name_plural = "API token", "API tokens"
        # The table kept the name it had when tokens lived in the `api` app (moved by a state-only migration).
        db_table = "api_apitoken"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.label} ({self.prefix}…)"

    @property
    def scopes(self) -> list[str]:
        return ["read", "write"] if self.scope == self.Scope.WRITE else ["read"]

    @property
    def is_oauth_grant(self) -> bool:
        return self.oauth_application_id is not None

    @property
    def can_write(self) -> bool:
        return self.scope == self.Scope.WRITE

    def is_usable(self, now: datetime | None = None) -> bool:
        moment = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > moment)

    @property
    def status(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= timezone.now():
            return "expired"
        return "active"


class UserSettings(models.Model):
    """One user's own settings, read by every door (REST, MCP, panel) when the caller does not say otherwise.
    A user who never saved any has no row: the defaults below apply (accounts.usersettings)."""

    class SearchFallback(models.TextChoices):
        # The values are memory.search's fallbacks plus "none" (accounts sits beside memory and cannot import it;
        # tests/accounts/test_usersettings.py keeps the two lists equal).
        NONE = "none"
        OVERVIEW = "overview"

    class CaptureMode(models.TextChoices):
        # capture.models.CaptureSession.Mode's values (accounts sits below capture and cannot import it;
        # tests/accounts/test_usersettings.py keeps the two lists equal).
        OFF = "off"
        LIGHT = "light"
        EAGER = "eager"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="atrium_settings")
    # What a search that matches nothing falls back to when the caller sends no `fallback`: nothing (the default),
    # or the labelled overview of the palaces searched.
    search_fallback = models.CharField(max_length=16, choices=SearchFallback.choices, default=SearchFallback.NONE)
    # The mode POST /api/v1/capture runs in when the client sends none: off (store nothing), light (user turns) or
    # eager (assistant turns too).
    capture_mode = models.CharField(max_length=8, choices=CaptureMode.choices, default=CaptureMode.LIGHT)
    # The panel's last scope (panel/scope.py: mine, project or both, and which project), so a new login opens where
    # the user left off instead of "My palace" alone, which hides every project memory. Empty: never chosen.
    panel_scope = models.CharField(max_length=8, blank=True, default="")
    panel_project = models.ForeignKey(
        "palace.Palace", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "user settings"
        verbose_name_plural = "user settings"

    def __str__(self) -> str:
        return f"settings of user {self.user_id}"
