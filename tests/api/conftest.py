"""REST fixtures: `api_for(user, scope="write")`, a bearer-token client for one user."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client


class Api:
    """A bearer-token client for one user: .get/.post/.patch/.send return (status, body), the body parsed from JSON,
    or the text of a response that is not JSON (profile.txt, bootstrap.txt). `.client` carries the token too."""

    def __init__(self, raw_token: str) -> None:
        self.client = Client(headers={"Authorization": f"Bearer {raw_token}"})

    def get(self, path: str, **params: Any) -> tuple[int, Any]:
        r = self.client.get(path, params)
        return r.status_code, _body(r)

    def post(self, path: str, body: Any = None) -> tuple[int, Any]:
        return self.send("post", path, body if body is not None else {})

    def patch(self, path: str, body: Any) -> tuple[int, Any]:
        return self.send("patch", path, body)

    def send(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        r = getattr(self.client, method)(path, body, content_type="application/json")
        return r.status_code, _body(r)


def _body(response: Any) -> Any:
    if response["Content-Type"].startswith("application/json"):
        return response.json()
    return response.content.decode()


@pytest.fixture
def api_for(token_for: Callable[..., str]) -> Callable[..., Api]:
    return lambda user, scope="write": Api(token_for(user, scope=scope))
