"""REST door to your own settings (accounts.usersettings): `GET /api/v1/settings` reads them (the defaults when you
never changed any), `PUT` changes the fields sent (a write token; a field left out or null stays as it is) with an
op row naming each change. The user is the caller, never a field."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Router, Schema
from pydantic import ConfigDict

from accounts.models import UserSettings
from accounts.usersettings import user_settings_get, user_settings_update
from api.auth import caller_of
from api.schemas import ErrorOut

router = Router(tags=["settings"])
ERRORS: dict[int, Any] = {401: ErrorOut, 403: ErrorOut, 422: ErrorOut}


class UserSettingsIn(Schema):
    """The values are spelled out so the OpenAPI document lists them (tests/accounts/test_usersettings.py keeps them
    equal to accounts.UserSettings' choices, which the service checks again)."""

    model_config = ConfigDict(extra="forbid")

    search_fallback: Literal["none", "overview"] | None = Field(default=None, description="null: unchanged")
    capture_mode: Literal["off", "light", "eager"] | None = Field(default=None, description="null: unchanged")


class UserSettingsOut(Schema):
    search_fallback: str = Field(description="what a search that matches nothing falls back to without `fallback`")
    capture_mode: str = Field(description="the mode POST /capture runs in when it is sent no `mode`")


def _out(row: UserSettings) -> dict[str, Any]:
    return {"search_fallback": row.search_fallback, "capture_mode": row.capture_mode}


@router.get("/settings", response={200: UserSettingsOut, **ERRORS})
def user_settings_read(request: HttpRequest) -> dict[str, Any]:
    """Your settings."""
    return _out(user_settings_get(user=caller_of(request).user))


@router.put("/settings", response={200: UserSettingsOut, **ERRORS})
def user_settings_put(request: HttpRequest, payload: UserSettingsIn) -> dict[str, Any]:
    """Change your settings (a write token): an unknown value is a 422 naming the field, and nothing is stored."""
    caller = caller_of(request)
    caller.require_write()
    return _out(user_settings_update(user=caller.user, actor=caller.actor, **payload.model_dump()))
