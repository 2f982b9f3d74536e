"""Websocket routes for live panel updates."""

from __future__ import annotations

from typing import Any

websocket_urlpatterns: list[Any] = []
