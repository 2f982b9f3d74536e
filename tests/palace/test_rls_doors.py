"""Row-level security's acting context is a session setting of the connection (palace/rls.py): these tests drive each
door that reuses a connection twice, for different callers, on one thread and one connection, and check that the
second caller sees only their rows (with the first caller's rows as the positive control) and that between calls the
session carries nothing. The MCP door has its own test (tests/api/mcp/test_rls_context.py), `atrium shell` its own
(tests/palace/test_rls.py).

Each test sets up its rows as the system, then drives the doors inside `acting_as_nobody()`, the outermost context of
a serving thread, on committed rows (no test transaction around the doors: the context is written in autocommit, as
in production).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.db import connection, transaction

from memory.tasks import decay_task, embeddings_backfill_task
from palace import rls
from palace.models import Palace
from palace.oplog import oplog_write
from tests.fakes.memories import make_memory
from tests.panel.wscomm import WebsocketCommunicator

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "alice keeps the lighthouse key under the mat"
LIVE_TIMEOUT = 3  # seconds for an event to reach a socket: a bound on a loaded machine, not a measurement


def _session() -> tuple[int, str, str, int]:
    """What the database says about this thread's connection: its backend, the two settings, and how many memories
    a query with no filter sees."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_backend_pid(), current_setting('atrium.user_id', true), current_setting('atrium.system', true)"
        )
        pid, user, system = cursor.fetchone()
        cursor.execute("SELECT count(*) FROM memory_memory")
        return int(pid), user or "", system or "", int(cursor.fetchone()[0])


def _socket(client: Any) -> WebsocketCommunicator:
    """The panel's websocket, opened with a logged-in test client's session."""
    from config.asgi import websocket_app

    headers = [
        (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()),
        (b"origin", b"http://testserver"),
        (b"host", b"testserver"),
    ]
    return WebsocketCommunicator(websocket_app, "/ws/panel/?live=today,log", headers=headers)


@pytest.fixture
def secret(alice: Any) -> Any:
    return make_memory(Palace.objects.get(personal_owner=alice), SECRET)


def test_consecutive_requests_on_one_connection_each_act_only_as_their_caller(
    secret: Any,
    alice: Any,
    charlie: Any,
    make_user: Callable[..., Any],
    client_for: Callable[[Any], Any],
    token_for: Callable[..., str],
    bearer: Callable[[str], dict[str, str]],
    client: Any,
    embedder_down: None,
) -> None:
    """The test client runs each request on this thread and its connection, as a server thread that keeps its
    connection does: a staff member in the admin (the system), alice with a token, charlie with a session, nobody."""
    staff = client_for(make_user("root", admin=True))
    alices = bearer(token_for(alice))
    charlies = client_for(charlie)
    with rls.acting_as_nobody():
        seen: list[tuple[int, str, str, int]] = [_session()]

        admin_page = staff.get("/admin/memory/memory/")
        assert admin_page.status_code == 200
        # The admin acted as the system: it lists alice's memory.
        assert f"/admin/memory/memory/{secret.pk}/change/" in admin_page.content.decode()
        seen.append(_session())

        mine = client.get("/api/v1/memories", **alices)
        assert mine.status_code == 200
        assert [item["content"] for item in mine.json()["items"]] == [SECRET]  # alice's token acted as alice
        hers = client.get("/api/v1/search", {"query": "lighthouse key"}, **alices)
        assert [hit["memory"]["id"] for hit in hers.json()["hits"]] == [secret.pk]
        seen.append(_session())

        theirs = charlies.get("/api/v1/memories")
        assert theirs.status_code == 200 and theirs.json()["items"] == []  # charlie's session: none of alice's rows
        found = charlies.get("/api/v1/search", {"query": "lighthouse key"})
        assert found.status_code == 200 and found.json()["hits"] == []
        seen.append(_session())

        assert client.get("/api/v1/memories").status_code == 401  # nobody signed in
        seen.append(_session())

    assert len({pid for pid, *_ in seen}) == 1  # one connection throughout
    assert [state[1:] for state in seen] == [("", "", 0)] * len(seen)  # and it carried nothing between requests


def test_a_task_acts_as_the_system_and_leaves_the_connection_as_it_found_it(
    secret: Any, alice: Any, embedder_down: None
) -> None:
    """Celery's task signals (config/celery.py, which `celery -A config worker` imports) around real tasks, run on
    this thread as a worker child runs them, one after another on its connection: a task that succeeds, one that
    fails, and one run eagerly inside a person's context, which must hand the person their own context back."""
    from config.celery import app

    assert embeddings_backfill_task.app is app  # the worker's app, with its signals
    with rls.acting_as_nobody():
        before = _session()
        done = embeddings_backfill_task.apply()
        assert done.successful()
        assert done.result["remaining"] == 1  # the task saw alice's memory without a vector: it acted as the system
        after_success = _session()

        failed = decay_task.apply(kwargs={"no_such_argument": True})
        assert failed.failed()
        after_failure = _session()

        with rls.acting_as(alice):
            assert embeddings_backfill_task.apply().result["remaining"] == 1
            inside_door = _session()

    assert before[0] == after_success[0] == after_failure[0] == inside_door[0]  # one connection
    assert before[1:] == after_success[1:] == after_failure[1:] == ("", "", 0)
    assert inside_door[1:] == (str(alice.pk), "", 1)  # back to alice, who sees her one memory


def test_websocket_consumers_of_two_users_share_a_connection_and_leave_nothing_on_it(
    secret: Any, alice: Any, charlie: Any, client_for: Callable[[Any], Any], system: Any
) -> None:
    """The consumers' sync work runs on one shared ORM thread (here: this one); with a connection kept between
    calls (CONN_MAX_AGE), one consumer's context must not reach the next call."""
    alice_palace = Palace.objects.get(personal_owner=alice)
    charlie_palace = Palace.objects.get(personal_owner=charlie)
    alices, charlies = client_for(alice), client_for(charlie)

    def note(palace: Palace) -> int:
        with transaction.atomic(), rls.acting_as_system("tests"):
            return oplog_write(op="memory.save", actor=system, palace=palace, target_kind="memory", target_id=1).pk

    async def scenario() -> list[tuple[int, str, str, int]]:
        seen = [await database_sync_to_async(_session)()]
        a, c = _socket(alices), _socket(charlies)
        assert (await a.connect())[0] and (await c.connect())[0]
        row = await database_sync_to_async(note)(alice_palace)
        assert f'id="op-{row}"' in await a.receive_from(timeout=LIVE_TIMEOUT)
        counts = await a.receive_from(timeout=LIVE_TIMEOUT)  # rendered acting as alice: her one memory
        assert 'id="stat-memories"' in counts and ">1<" in counts
        seen.append(await database_sync_to_async(_session)())
        own = await database_sync_to_async(note)(charlie_palace)
        assert f'id="op-{own}"' in await c.receive_from(timeout=LIVE_TIMEOUT)
        theirs = await c.receive_from(timeout=LIVE_TIMEOUT)  # rendered acting as charlie, right after alice's
        assert 'id="stat-memories"' in theirs and ">0<" in theirs
        seen.append(await database_sync_to_async(_session)())
        await a.disconnect()
        await c.disconnect()
        return seen

    original = connection.settings_dict
    connection.close()
    connection.settings_dict = {**original, "CONN_MAX_AGE": 300}  # kept across the consumers' calls
    try:
        with rls.acting_as_nobody():
            seen = async_to_sync(scenario)()
    finally:
        connection.close()
        connection.settings_dict = original
    assert len({pid for pid, *_ in seen}) == 1  # the consumers' calls reused one connection
    assert [state[1:] for state in seen] == [("", "", 0)] * 3


def test_a_connection_that_opens_already_carrying_a_context_is_told_the_current_one(secret: Any, alice: Any) -> None:
    """A new session is not assumed empty: PGOPTIONS, `ALTER ROLE ... SET`, the `options` of DATABASE_URL or a
    pooler's reused server session can hand it a context. Here the connection opens as alice (startup options)."""
    original = connection.settings_dict
    connection.close()
    connection.settings_dict = {
        **original,
        "OPTIONS": {**original["OPTIONS"], "options": f"-c atrium.user_id={alice.pk}"},
    }
    try:
        with rls.acting_as_nobody():
            opened = _session()
            with connection.cursor() as cursor:
                cursor.execute("RESET atrium.user_id")  # back to what the session arrived with
                cursor.execute("SELECT count(*) FROM memory_memory")
                arrived_with = int(cursor.fetchone()[0])
    finally:
        connection.close()
        connection.settings_dict = original
    assert arrived_with == 1  # the positive control: the session came carrying alice's context
    assert opened[1:] == ("", "", 0)  # but the first query ran as nobody, as this thread is
