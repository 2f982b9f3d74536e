"""A user's own settings: read them (the defaults when none were saved), change them (with an op row), and choose
the search fallback a door passes to memory.search: the caller's explicit choice wins, else the user's setting.
The capture mode is read by capture (capture.services.capture_mode_for) the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import transaction

from accounts.models import UserSettings
from palace.actors import Actor
from palace.errors import InvalidInput
from palace.oplog import oplog_write

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

NO_FALLBACK = UserSettings.SearchFallback.NONE.value
SEARCH_FALLBACKS: tuple[str, ...] = tuple(UserSettings.SearchFallback.values)
CAPTURE_MODES: tuple[str, ...] = tuple(UserSettings.CaptureMode.values)


@dataclass(frozen=True)
class FallbackChoice:
    """The fallback a search runs with, and where it came from: "request" (the caller named it) or "setting" (the
    user's default, which is "none" until they change it)."""

    fallback: str  # "none" or one of memory.search's FALLBACKS
    source: str  # "request" | "setting"

    @property
    def for_search(self) -> str | None:
        """The value memory.search's SearchRequest takes (None: no fallback)."""
        return None if self.fallback == NO_FALLBACK else self.fallback


def user_settings_get(*, user: AbstractBaseUser | AnonymousUser | None) -> UserSettings:
    """The user's settings; an unsaved row with the defaults when they never changed any (or for no user)."""
    if user is None or not user.is_authenticated:
        return UserSettings()
    found = UserSettings.objects.filter(user_id=user.pk).first()
    return found if found is not None else UserSettings(user_id=user.pk)


def user_settings_update(
    *,
    user: AbstractBaseUser,
    actor: Actor,
    search_fallback: str | None = None,
    capture_mode: str | None = None,
) -> UserSettings:
    """Change the user's settings (None: leave that one as it is); one op row says what changed, each field with
    its before and after. An unknown value is refused and nothing is stored."""
    asked = {"search_fallback": search_fallback, "capture_mode": capture_mode}
    allowed = {"search_fallback": SEARCH_FALLBACKS, "capture_mode": CAPTURE_MODES}
    for name, value in asked.items():
        if value is not None and value not in allowed[name]:
            raise InvalidInput(f"{name} must be one of {', '.join(allowed[name])}", field=name)
    with transaction.atomic():
        row, _ = UserSettings.objects.select_for_update().get_or_create(user_id=user.pk)
        changes = {
            name: {"before": getattr(row, name), "after": value}
            for name, value in asked.items()
            if value is not None and getattr(row, name) != value
        }
        if changes:
            for name, change in changes.items():
                setattr(row, name, change["after"])
            row.save(update_fields=[*changes, "updated_at"])
            oplog_write(
                op="user.settings",
                actor=actor,
                target_kind="user",
                target_id=user.pk,
                detail={"user": user.get_username(), **changes},
            )
    return row


def search_fallback_choose(*, user: AbstractBaseUser | AnonymousUser | None, asked: str | None) -> FallbackChoice:
    """The fallback for one search: `asked` when the caller sent one (checked by the door and again by
    memory.search), else the user's setting. Reads the setting only when it is needed."""
    if asked is not None:
        return FallbackChoice(fallback=asked, source="request")
    return FallbackChoice(fallback=user_settings_get(user=user).search_fallback, source="setting")


def user_scope_remember(*, user: AbstractBaseUser, mode: str, project_id: int | None) -> None:
    """Keep the panel's scope choice for the user's next login (panel/scope.py checks it, and the project's
    membership, when it reads it back). No op row: it is where the user last looked, changed with every click of
    the switcher, not a setting that changes what any door does."""
    row, _ = UserSettings.objects.get_or_create(user_id=user.pk)
    fields = {"panel_scope": mode, **({"panel_project_id": project_id} if project_id is not None else {})}
    if any(getattr(row, name) != value for name, value in fields.items()):
        for name, value in fields.items():
            setattr(row, name, value)
        row.save(update_fields=[*fields, "updated_at"])
