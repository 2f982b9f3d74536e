"""Row-level security on the MCP door: each tool call acts as its token's user, and the context ends with the call,
on a worker thread that keeps its database connection for the next caller (api/mcp/workers.py, runner.py)."""

from __future__ import annotations

import threading
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connection

from palace import rls
from palace.models import Palace
from tests.api.mcp.conftest import mcp_client, run
from tests.fakes.memories import make_memory


def _probe() -> tuple[str, int, tuple[str, str], rls.Acting]:
    """On the ORM thread: which thread, which backend, what the session says, what Python says."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_backend_pid(), current_setting('atrium.user_id', true), current_setting('atrium.system', true)"
        )
        pid, user, system = cursor.fetchone()
        cursor.execute("SELECT count(*) FROM memory_memory")
        visible = int(cursor.fetchone()[0])
    return threading.current_thread().name, pid, (user or "", system or ""), rls.Acting(user_id=visible)


def test_the_context_of_one_mcp_call_never_reaches_the_next_on_the_same_thread(
    tokens: dict[str, str], alice: Any, charlie: Any, settings: Any
) -> None:
    settings.ATRIUM_MCP_THREADS = 1  # one ORM thread: every request below runs on it
    from config.asgi import lifecycle

    lifecycle.close_workers()
    make_memory(Palace.objects.get(personal_owner=alice), "alice keeps the lighthouse key under the mat")

    async def scenario() -> tuple[Any, Any, Any, Any]:
        async with mcp_client(tokens["alice"]) as client:
            mine = await client.call_tool("memory_search", {"query": "lighthouse key"})
        workers = lifecycle.workers
        assert workers is not None
        async with workers.request():
            between = await sync_to_async(_probe)()
        async with mcp_client(tokens["charlie"]) as client:
            theirs = await client.call_tool("memory_search", {"query": "lighthouse key"})
        async with workers.request():
            after = await sync_to_async(_probe)()
        return mine, between, theirs, after

    mine, between, theirs, after = run(scenario())
    text = "\n".join(getattr(block, "text", "") for block in mine.content)
    assert "under the mat" in text  # alice's call acted as alice: the positive control
    other = "\n".join(getattr(block, "text", "") for block in theirs.content)
    assert "under the mat" not in other and "No memory matched" in other
    assert between[0] == after[0] and between[1] == after[1]  # the same thread and connection throughout
    assert between[2] == ("", "") and after[2] == ("", "")  # nothing left on the session
    assert between[3].user_id == 0 and after[3].user_id == 0  # a raw query between calls sees no memory


def test_a_failing_mcp_call_leaves_no_context_on_its_thread_either(
    tokens: dict[str, str], alice: Any, charlie: Any, settings: Any
) -> None:
    """A tool body that ends in an error (here: forgetting a memory of another palace, "not found") restores the
    thread's context like one that succeeds; the next caller on the thread and connection starts from nothing."""
    settings.ATRIUM_MCP_THREADS = 1
    from config.asgi import lifecycle

    lifecycle.close_workers()
    theirs = make_memory(Palace.objects.get(personal_owner=charlie), "charlie's own note about the lighthouse")
    make_memory(Palace.objects.get(personal_owner=alice), "alice keeps the lighthouse key under the mat")

    async def scenario() -> tuple[Any, Any, Any]:
        async with mcp_client(tokens["alice"]) as client:
            mine = await client.call_tool("memory_search", {"query": "lighthouse key"})
            refused = await client.call_tool("memory_forget", {"id": theirs.pk, "reason": "not mine"})
        workers = lifecycle.workers
        assert workers is not None
        async with workers.request():
            after = await sync_to_async(_probe)()
        return mine, refused, after

    mine, refused, after = run(scenario())
    assert "under the mat" in "\n".join(getattr(block, "text", "") for block in mine.content)  # acted as alice
    assert refused.is_error and "not found" in "\n".join(getattr(block, "text", "") for block in refused.content)
    assert after[2] == ("", "")  # nothing left on the session
    assert after[3].user_id == 0  # a raw query after the failed call sees no memory (charlie's exists)
    theirs.refresh_from_db()
    assert theirs.status == "active"
