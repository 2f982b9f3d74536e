"""Capture fixtures: `capture_as(user, scope="write")`, a bearer-token client that posts to /api/v1/capture and
returns (status, body); `turns(...)`, a session's turns in the endpoint's shape."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

URL = "/api/v1/capture"


class CaptureClient:
    def __init__(self, raw_token: str) -> None:
        self.client = Client(headers={"Authorization": f"Bearer {raw_token}"})

    def post(self, body: Any, *, raw: bool = False) -> tuple[int, Any]:
        data = body if raw else body
        response = self.client.post(URL, data, content_type="application/json")
        is_json = response["Content-Type"].startswith("application/json")
        return response.status_code, response.json() if is_json else response.content.decode()


@pytest.fixture
def capture_as(token_for: Callable[..., str]) -> Callable[..., CaptureClient]:
    return lambda user, scope="write": CaptureClient(token_for(user, scope=scope))


def make_turns(*texts: str, start: int = 0, role: str = "user") -> list[dict[str, Any]]:
    return [
        {
            "index": start + i,
            "role": role,
            "text": text,
            "tool": None,
            "at": f"2026-03-0{1 + (start + i) % 9}T10:00:00Z",
        }
        for i, text in enumerate(texts)
    ]


@pytest.fixture
def turns() -> Callable[..., list[dict[str, Any]]]:
    return make_turns
