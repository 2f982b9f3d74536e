"""Live panel: a websocket consumer per user, in groups per user and per palace membership. Writes committed
anywhere (MCP, REST, panel, jobs) reach the members of that palace only, within a second."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async

from palace import events
from palace.models import Palace
from tests.panel.wscomm import LIVE_TIMEOUT, WebsocketCommunicator, communicator, save_op

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_user_receives_only_their_own_palaces_events(alice, charlie, client_for, system):
    alice_palace = Palace.objects.get(personal_owner=alice)
    charlie_palace = Palace.objects.get(personal_owner=charlie)
    alice_client, charlie_client = client_for(alice), client_for(charlie)

    async def scenario():
        a, c = communicator(alice_client), communicator(charlie_client)
        assert (await a.connect())[0] and (await c.connect())[0]
        row = await database_sync_to_async(save_op)(alice_palace, system)
        got = await a.receive_from(timeout=LIVE_TIMEOUT)  # within a second of the commit
        assert f'id="op-{row.pk}"' in got and "Saved a memory" in got and 'hx-swap-oob="afterbegin:#log-rows"' in got
        counts = await a.receive_from(timeout=LIVE_TIMEOUT)
        assert 'id="due-badge"' in counts and 'id="stat-memories"' in counts
        assert await c.receive_nothing(timeout=0.5)  # charlie hears nothing of alice's palace
        own = await database_sync_to_async(save_op)(charlie_palace, system, "memory.forget")
        assert f'id="op-{own.pk}"' in await c.receive_from(timeout=LIVE_TIMEOUT)  # positive control for charlie
        await c.receive_from(timeout=LIVE_TIMEOUT)  # his counts
        assert await a.receive_nothing(timeout=0.5)
        await a.disconnect()
        await c.disconnect()

    async_to_sync(scenario)()


def test_project_events_reach_members_in_that_scope_not_outsiders(alice, bob, charlie, project, client_for, system):
    viewer, outsider = client_for(bob), client_for(charlie)
    viewer.post("/scope/", {"mode": "project", "project": project.pk, "next": "/log/"})

    async def scenario():
        b, c = communicator(viewer, "zh-CN,zh;q=0.9"), communicator(outsider)
        assert (await b.connect())[0] and (await c.connect())[0]
        row = await database_sync_to_async(save_op)(project, system)
        got = await b.receive_from(timeout=LIVE_TIMEOUT)
        assert f'id="op-{row.pk}"' in got and "保存了一条记忆" in got  # rendered in the viewer's language
        assert await c.receive_nothing(timeout=0.5)
        await b.disconnect()
        await c.disconnect()

    async_to_sync(scenario)()


def test_event_outside_the_current_scope_is_not_rendered(alice, project, client_for, system):
    client = client_for(alice)  # scope: my palace only

    async def scenario():
        a = communicator(client)
        assert (await a.connect())[0]
        await database_sync_to_async(save_op)(project, system)
        assert await a.receive_nothing(timeout=0.5)
        await a.disconnect()

    async_to_sync(scenario)()


def test_anonymous_websocket_is_refused(db):
    from config.asgi import websocket_app

    async def scenario():
        anon = WebsocketCommunicator(websocket_app, "/ws/panel/", headers=[(b"origin", b"http://testserver")])
        connected, _ = await anon.connect()
        assert not connected

    async_to_sync(scenario)()


def test_a_failing_channel_layer_never_breaks_a_write(alice, system, monkeypatch):
    palace = Palace.objects.get(personal_owner=alice)

    def boom(*args, **kwargs):
        raise RuntimeError("redis is down")

    monkeypatch.setattr(events._publisher, "put", boom)
    row = save_op(palace, system)
    assert row.pk is not None


def test_a_rest_write_reaches_the_open_panel(alice, client_for, token_for, bearer):
    from django.test import Client

    panel_client, raw = client_for(alice), token_for(alice)

    def rest_save():
        response = Client().post(
            "/api/v1/memories",
            {"content": "The deploy freeze starts on December 20", "kind": "decision"},
            content_type="application/json",
            **bearer(raw),
        )
        assert response.status_code == 201, response.content
        return response.json()["memory"]["id"]

    async def scenario():
        a = communicator(panel_client)
        assert (await a.connect())[0]
        memory_id = await database_sync_to_async(rest_save)()
        got = await a.receive_from(timeout=LIVE_TIMEOUT)
        assert "Saved a memory" in got and f"#{memory_id}" in got and "by alice via token" in got
        counts = await a.receive_from(timeout=LIVE_TIMEOUT)
        assert '<b id="stat-memories" hx-swap-oob="true">1</b>' in counts
        await a.disconnect()

    async_to_sync(scenario)()


def test_a_new_membership_joins_the_palace_group_without_reconnecting(alice, bob, client_for, system):
    from palace.services import member_set, project_create

    viewer = client_for(bob)
    newer = project_create(origin="https://github.com/atrium-test/newer", owner=alice, actor=system)

    def join_and_scope():
        member_set(palace=newer, user=bob, role="viewer", actor=system)
        assert viewer.post("/scope/", {"mode": "project", "project": newer.pk, "next": "/log/"}).status_code == 302

    async def scenario():
        b = communicator(viewer)
        assert (await b.connect())[0]
        await database_sync_to_async(save_op)(newer, system)
        assert await b.receive_nothing(timeout=0.5)  # not a member yet: nothing
        await database_sync_to_async(join_and_scope)()
        await b.receive_nothing(timeout=0.5)  # the membership event is handled, nothing rendered
        row = await database_sync_to_async(save_op)(newer, system)
        assert f'id="op-{row.pk}"' in await b.receive_from(timeout=LIVE_TIMEOUT)
        await b.disconnect()

    async_to_sync(scenario)()


def _signed_out_close(output):
    return output == {"type": "websocket.close", "code": 4401}


@pytest.mark.parametrize("ending", ["logout", "deactivate"])
def test_the_socket_stops_streaming_when_the_session_ends(alice, bob, client_for, system, ending):
    palace = Palace.objects.get(personal_owner=alice)
    bob_palace = Palace.objects.get(personal_owner=bob)
    alice_client, bob_client = client_for(alice), client_for(bob)

    def end_session():
        if ending == "logout":
            alice_client.logout()
        else:
            alice.is_active = False
            alice.save(update_fields=["is_active"])

    async def scenario():
        a, b = communicator(alice_client), communicator(bob_client)
        assert (await a.connect())[0] and (await b.connect())[0]
        row = await database_sync_to_async(save_op)(palace, system)
        assert f'id="op-{row.pk}"' in await a.receive_from(timeout=LIVE_TIMEOUT)  # positive control: it streams
        await a.receive_from(timeout=LIVE_TIMEOUT)  # the counts
        await database_sync_to_async(end_session)()
        await database_sync_to_async(save_op)(palace, system)
        assert _signed_out_close(await a.receive_output(timeout=LIVE_TIMEOUT))  # closed, nothing rendered
        assert await a.receive_nothing(timeout=0.5)
        other = await database_sync_to_async(save_op)(bob_palace, system)
        assert f'id="op-{other.pk}"' in await b.receive_from(timeout=LIVE_TIMEOUT)  # bob's session is untouched
        await b.disconnect()

    async_to_sync(scenario)()


def test_the_socket_opens_only_from_the_panels_exact_origin(alice, client_for, settings):
    from config.asgi import websocket_app

    settings.ATRIUM_PUBLIC_URL = "https://atrium.example.com"
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "atrium.example.com"]
    sid = client_for(alice).cookies["sessionid"].value

    async def opens(origin, host=b"testserver"):
        headers = [(b"cookie", f"sessionid={sid}".encode()), (b"origin", origin), (b"host", host)]
        socket = WebsocketCommunicator(websocket_app, "/ws/panel/", headers=headers)
        connected, _ = await socket.connect()
        await socket.disconnect()
        return connected

    async def scenario():
        # Positive controls: the page's own origin, and the public URL's (behind a TLS proxy).
        assert await opens(b"http://testserver")
        assert await opens(b"https://atrium.example.com", b"atrium.example.com")
        # Another program on the same host (any other port), another scheme, another allowed host's name.
        assert not await opens(b"http://testserver:3000")
        assert not await opens(b"https://testserver")
        assert not await opens(b"http://atrium.example.com:8443", b"atrium.example.com")
        assert not await opens(b"http://localhost", b"testserver")
        assert not await opens(b"http://evil.example")

    async_to_sync(scenario)()
