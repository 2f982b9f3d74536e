"""/mcp does not pass through Django's middleware: config/asgi.py answers 503 with a JSON-RPC error while the
database is unreachable, where the SDK's app would answer 500. The real PostgreSQL restart is in
tests/ops/test_faults.py."""

from __future__ import annotations

from unittest import mock

from django.db import OperationalError
from django.db.backends.utils import CursorWrapper

from tests.api.mcp.conftest import raw_post_sync

LISTING = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def test_mcp_answers_503_json_while_the_database_is_unreachable(tokens: dict[str, str]) -> None:
    assert raw_post_sync(LISTING, token=tokens["alice"]).status_code == 200  # control
    error = OperationalError("server closed the connection unexpectedly")
    with mock.patch.object(CursorWrapper, "execute", side_effect=error):
        response = raw_post_sync(LISTING, token=tokens["alice"])
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/json"
    assert response.headers["retry-after"] == "5"
    assert "database is unreachable" in response.json()["error"]["message"]
    assert raw_post_sync(LISTING, token=tokens["alice"]).status_code == 200  # recovers on a new connection
