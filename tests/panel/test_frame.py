"""The panel's frame outside the browser: a live connection gets only the fragments whose targets its page has, the
500 page needs no database, the 404 page for a visitor, and /favicon.ico."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.test import RequestFactory

from palace.models import Palace
from panel.consumers import live_targets
from panel.views.errors import server_error
from tests.panel.wscomm import LIVE_TIMEOUT, communicator, save_op


def test_live_targets_are_read_from_the_query_and_unknown_names_dropped() -> None:
    assert live_targets(b"live=today,log") == {"today", "log"}
    assert live_targets(b"live=judge&live=nope,%3Cscript%3E") == {"judge"}
    assert live_targets(b"") == frozenset()


@pytest.mark.django_db(transaction=True)
def test_a_page_gets_only_the_fragments_it_has_targets_for(alice: Any, client_for: Any, system: Any) -> None:
    palace = Palace.objects.get(personal_owner=alice)
    client = client_for(alice)

    async def scenario() -> None:
        plain, log = communicator(client, live=""), communicator(client, live="log")
        assert (await plain.connect())[0] and (await log.connect())[0]
        row = await database_sync_to_async(save_op)(palace, system, "edge.resolve")
        # The Log page: its row, then the badge (no Today counts, no Judge trigger).
        got = await log.receive_from(timeout=LIVE_TIMEOUT)
        assert f'id="op-{row.pk}"' in got and "judge-live" not in got
        counts = await log.receive_from(timeout=LIVE_TIMEOUT)
        assert 'id="due-badge"' in counts and "stat-memories" not in counts
        # A page with none of those targets (a memory page): only the badge every page has.
        only = await plain.receive_from(timeout=LIVE_TIMEOUT)
        assert 'id="due-badge"' in only and "log-rows" not in only and "judge-live" not in only
        assert "stat-" not in only
        assert await plain.receive_nothing(timeout=0.3)
        await plain.disconnect()
        await log.disconnect()

    async_to_sync(scenario)()


def test_the_500_page_needs_no_database_and_keeps_the_navigation() -> None:
    # No django_db mark: pytest-django makes any database access in this test an error.
    response = server_error(RequestFactory().get("/today/"))
    page = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong on the server" in page and 'href="/judge/"' in page and "atrium.css" in page


@pytest.mark.django_db
def test_the_404_page_for_a_visitor_offers_to_log_in(client: Any, alice: Any, client_for: Any) -> None:
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and "Page not found" in response.content.decode()
    assert 'href="/login/"' in response.content.decode() and "mainnav" not in response.content.decode()
    signed_in = client_for(alice).get("/no-such-page/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert signed_in.status_code == 404 and "页面不存在" in signed_in.content.decode()
    assert "mainnav" in signed_in.content.decode()  # the positive control: the frame's navigation


@pytest.mark.django_db
def test_favicon(client: Any) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] == "image/x-icon"
    assert b"".join(response.streaming_content)[:4] == b"\0\0\1\0"
