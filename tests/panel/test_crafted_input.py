"""Crafted cursors and ids answer like an invalid cursor (the first page) or a 4xx with a message, never a 500.

str.isdigit() accepts '²' and Arabic-Indic digits, which int() then refuses or reads; float-looking and huge
numbers, negative ones and overlong strings must all be harmless."""

from __future__ import annotations

import base64

import pytest
from django.test import Client

CRAFTED = [
    "1e30.1",
    "1e308",
    "-1",
    "9" * 400,
    "١٢٣",
    "²",
    "x" * 5000,
    "%00",
    "\x00",
    "....",
]


def b64(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


# cursors that decode to well-formed parts with hostile values
FORGED = [
    b64("9999-12-31T23:59:59+00:00|99999999999999999999999"),
    b64("0001-01-01T00:00:00-23:59|1"),
    b64("2024-01-01T00:00:00|-5"),
    b64("2024-01-01T00:00:00|١٢٣"),
    b64("1|2|99999999999999999999999"),
    b64("١|٢|٣"),
    b64("0001-01-01T00:00:00+23:59"),
    b64("9999-12-31T23:59:59-23:59"),
]


@pytest.fixture
def alice_client(alice, client_for, make_memory, personal) -> Client:
    make_memory(personal, "The deploy runs on Fridays")
    return client_for(alice)


PAGES = [("/palace/", {}), ("/palace/", {"sort": "route"}), ("/episodes/", {}), ("/corridor/rooms/", {})]


@pytest.mark.parametrize("cursor", CRAFTED + FORGED)
@pytest.mark.parametrize(("url", "params"), PAGES)
def test_crafted_cursor_is_the_first_page_never_a_500(
    alice_client: Client, url: str, params: dict[str, str], cursor: str
) -> None:
    assert alice_client.get(url, {**params, "after": cursor}).status_code == 200


@pytest.mark.parametrize("cursor", CRAFTED + FORGED)
def test_crafted_api_cursor_is_a_422_never_a_500(alice, client_for, cursor: str) -> None:
    response = client_for(alice).get("/api/v1/memories", {"cursor": cursor})
    assert response.status_code in (200, 422), response.content
    if response.status_code == 422:
        assert "cursor" in response.content.decode()


@pytest.mark.parametrize("room", ["²", "١٢٣", "9" * 400, "-1", "1e30"])
def test_crafted_room_is_harmless(alice, client_for, room: str) -> None:
    client = client_for(alice)
    assert client.get("/api/v1/memories", {"room": room}).status_code in (200, 404, 422)
    assert client.get("/palace/", {"room": room}).status_code == 200


@pytest.mark.parametrize("raw", ["²", "١٢٣", "9" * 400])
def test_crafted_batch_ids_are_a_4xx_never_a_500(alice, client_for, make_memory, personal, raw: str) -> None:
    memory = make_memory(personal, "Tea, not coffee")
    client = client_for(alice)
    response = client.post("/palace/batch/", {"action": "forget", "ids": [raw]})
    assert 400 <= response.status_code < 500
    memory.refresh_from_db()
    assert memory.status == "active"
    # positive control: a real id is forgotten
    client.post("/palace/batch/", {"action": "forget", "ids": [str(memory.pk)]})
    memory.refresh_from_db()
    assert memory.status == "forgotten"


@pytest.mark.parametrize("raw", CRAFTED)
def test_crafted_log_and_scope_values_are_harmless(alice_client: Client, raw: str) -> None:
    assert alice_client.get("/log/", {"before": raw}).status_code == 200
    assert alice_client.get("/api/v1/oplog", {"before": raw}).status_code in (200, 422)
    assert alice_client.post("/scope/", {"mode": "project", "project": raw}).status_code in (302, 404)
