"""A lost database (PostgreSQL restarting, a failover) answers 503 with a clear message, never a 500 page: the REST
error body under /api/, a plain page for the panel (config.middleware.DatabaseUnavailableMiddleware). The same
requests with the database reachable are the positive control. The real restart is in tests/ops/test_faults.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from django.db import InterfaceError, OperationalError
from django.db.backends.utils import CursorWrapper


@contextmanager
def database_down(error: type[Exception] = OperationalError) -> Iterator[None]:
    with mock.patch.object(CursorWrapper, "execute", side_effect=error("server closed the connection unexpectedly")):
        yield


def test_rest_answers_503_json_while_the_database_is_unreachable(
    alice: Any, token_for: Callable[..., str], client: Any
) -> None:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token_for(alice)}"}
    assert client.get("/api/v1/palaces", **headers).status_code == 200  # control
    for error in (OperationalError, InterfaceError):
        with database_down(error):
            response = client.get("/api/v1/palaces", **headers)
        assert response.status_code == 503
        assert response["Content-Type"] == "application/json"
        assert response["Retry-After"] == "5"
        assert response.json()["error"]["code"] == "database_unavailable"
        assert "database is unreachable" in response.json()["error"]["message"]
    assert client.get("/api/v1/palaces", **headers).status_code == 200  # and back


def test_the_panel_answers_a_plain_503_page_while_the_database_is_unreachable(
    alice: Any, client_for: Callable[[Any], Any]
) -> None:
    browser = client_for(alice)
    assert browser.get("/log/").status_code == 200  # control
    with database_down():
        response = browser.get("/log/")
    assert response.status_code == 503
    assert response["Content-Type"].startswith("text/html")
    assert b"database is unreachable" in response.content
    assert browser.get("/log/").status_code == 200


def test_other_errors_are_not_dressed_as_an_unreachable_database(alice: Any, client_for: Callable[[Any], Any]) -> None:
    browser = client_for(alice)
    browser.raise_request_exception = False
    with mock.patch.object(CursorWrapper, "execute", side_effect=RuntimeError("a bug")):
        response = browser.get("/log/")
    assert response.status_code == 500
