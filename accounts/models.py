"""Per-user API tokens. Only a SHA-256 hash is stored; the raw token is shown once at creation."""

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

    class Meta:
        # The table kept the name it had when tokens lived in the `api` app (moved by a state-only migration).
        db_table = "api_apitoken"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.label} ({self.prefix}…)"

    @property
    def scopes(self) -> list[str]:
        return ["read", "write"] if self.scope == self.Scope.WRITE else ["read"]

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
