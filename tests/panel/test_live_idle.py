"""A panel websocket that has heard nothing for a while still gets the next event. The consumer waits for events in
channels_redis's blocking 5 s BZPOPMIN; redis-py 8 gives every read a 5 s socket timeout by default, so an idle
wait timed out and the exception closed the consumer (config/settings.py, CHANNEL_LAYERS)."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async

from palace.models import Palace
from tests.panel.wscomm import LIVE_TIMEOUT, communicator, save_op

pytestmark = pytest.mark.django_db(transaction=True)

IDLE_SECONDS = 7  # beyond the 5 s blocking wait and redis-py's default 5 s read timeout


def test_an_idle_socket_still_receives_the_next_event(alice, client_for, system):
    palace = Palace.objects.get(personal_owner=alice)
    browser = client_for(alice)

    async def scenario():
        socket = communicator(browser)
        assert (await socket.connect())[0]
        first = await database_sync_to_async(save_op)(palace, system)
        assert f'id="op-{first.pk}"' in await socket.receive_from(timeout=LIVE_TIMEOUT)  # control: live at once
        await socket.receive_from(timeout=LIVE_TIMEOUT)  # its counts
        await asyncio.sleep(IDLE_SECONDS)
        later = await database_sync_to_async(save_op)(palace, system)
        assert f'id="op-{later.pk}"' in await socket.receive_from(timeout=LIVE_TIMEOUT)
        await socket.disconnect()

    async_to_sync(scenario)()
