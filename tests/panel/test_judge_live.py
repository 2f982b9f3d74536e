"""The Judge page live: a recorded adjudication or a decided edge in a palace of the user's scope sends the trigger
that makes /judge/ re-fetch its open contradictions, proposals and recent rulings; an outsider's socket hears
nothing."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async

from memory.lifecycle import edge_resolve
from memory.models import Edge
from memory.save import memory_save
from palace.actors import Actor
from palace.models import Palace
from tests.fakes.judging import contradiction
from tests.panel.wscomm import LIVE_TIMEOUT, communicator

pytestmark = pytest.mark.django_db(transaction=True)
TRIGGER = 'id="judge-live"'


async def _drain(socket: Any, quiet: float = 0.8) -> str:
    """The first message (waited for as long as a live update may take on a loaded machine), then everything the
    socket receives until it has been quiet for `quiet` seconds."""
    got = [await socket.receive_from(timeout=LIVE_TIMEOUT)]
    while not await socket.receive_nothing(timeout=quiet):
        got.append(await socket.receive_from(timeout=LIVE_TIMEOUT))
    return "".join(got)


def test_adjudication_and_decision_refresh_the_judge_of_members_only(alice: Any, charlie: Any, client_for: Any) -> None:
    palace = Palace.objects.get(personal_owner=alice)
    owner, outsider = client_for(alice), client_for(charlie)

    async def scenario() -> None:
        a, c = communicator(owner), communicator(outsider)
        assert (await a.connect())[0] and (await c.connect())[0]
        edge = await database_sync_to_async(lambda: contradiction(palace, alice).edge.pk)()
        got = await _drain(a)
        assert TRIGGER in got and 'hx-select="#judge-open"' in got  # the adjudication / new edge reached alice
        # the trigger re-fetches the recent rulings too, with the filters the page shows
        assert 'hx-select-oob="#judge-proposals,#judge-rulings"' in got and 'hx-include="#judge-filters"' in got
        await database_sync_to_async(edge_resolve)(edge_id=edge, decision="keep_newer", actor=Actor.for_user(alice))
        got = await _drain(a)
        assert TRIGGER in got and 'id="op-' in got  # the edge.decide row, with the Judge trigger
        assert await c.receive_nothing(timeout=0.3)  # charlie heard nothing of alice's palace
        assert await database_sync_to_async(lambda: Edge.objects.get(pk=edge).status)() == "confirmed"
        await a.disconnect()
        await c.disconnect()

    async_to_sync(scenario)()


def test_memory_ops_do_not_send_the_judge_trigger(alice: Any, client_for: Any) -> None:
    """Control: an ordinary save (no neighbour, so no ruling) refreshes the Log, not the Judge."""
    palace = Palace.objects.get(personal_owner=alice)
    owner = client_for(alice)

    async def scenario() -> None:
        a = communicator(owner)
        assert (await a.connect())[0]
        await database_sync_to_async(memory_save)(
            palace=palace, actor=Actor.for_user(alice), content="The wiki lives on Confluence.", kind="fact"
        )
        got = await _drain(a)
        assert 'id="op-' in got and TRIGGER not in got
        await a.disconnect()

    async_to_sync(scenario)()
