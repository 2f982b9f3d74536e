"""Websocket routes for live panel updates."""

from __future__ import annotations

from typing import Any

from django.urls import path

from panel.consumers import PanelConsumer

websocket_urlpatterns: list[Any] = [path("ws/panel/", PanelConsumer.as_asgi())]
