"""Faults on real processes: one `atrium up --no-worker` (embedded PostgreSQL and Redis, uvicorn) with a Celery
worker started by hand beside it, and an embeddings endpoint (the fake OpenAI server on loopback) that the web
process and the worker both call, so a test can make it fail, slow down or recover while they run.

- the embedder failing at run time: saves land without a vector and say so; the backfill catches up;
- the worker killed (SIGKILL, all of it) in the middle of that backfill: after a restart no memory is lost and none
  is embedded twice (counted);
- Redis stopped and started again while the panel and MCP are in use: saves land, the panel answers, live updates
  and the worker come back;
- PostgreSQL stopped and started again under `atrium up`: a clear 503 (JSON for /api and /mcp, a plain page for the
  panel) while it is down, answers again after, with no restart of Atrium.

The tests share the stack (starting it costs tens of seconds on a loaded machine) and each leaves it healthy.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from ops.bench import LocalStack, local_stack
from ops.embedded import start_redis
from tests.fakes.openai_server import EMBEDDINGS_PATH, FakeOpenAI, Slow, http_error
from tests.ops import faults

pytestmark = pytest.mark.slow

PASSWORD = "faults-pw-1234"
WORKER = "faults"


@pytest.fixture(scope="module")
def embedder() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="module")
def stack(embedder: FakeOpenAI) -> Iterator[LocalStack]:
    env = faults.fake_embedder_env(embedder.base_url)
    with local_stack(1, worker=False, password=PASSWORD, env=env) as running:
        yield running
        print("atrium up's log (tail):\n" + running.log()[-4000:])  # shown when a test failed


@pytest.fixture(scope="module")
def worker(stack: LocalStack) -> Iterator[dict[str, Any]]:
    """The hand-started worker; a test that kills it puts a new one in `["proc"]`."""
    holder = {"proc": faults.start_worker(stack, WORKER)}
    yield holder
    faults.kill_group(holder["proc"], faults.signal.SIGTERM)


@pytest.fixture(scope="module")
def restarted_redis() -> Iterator[list[Any]]:
    """Redis servers a test started in place of the stack's own (not in `atrium up`'s process group): stopped at
    the end of the module."""
    started: list[Any] = []
    yield started
    for proc in started:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def healthy(embedder: FakeOpenAI) -> Iterator[None]:
    embedder.standing(EMBEDDINGS_PATH, None)
    yield
    embedder.standing(EMBEDDINGS_PATH, None)


def without_vector(stack: LocalStack, ids: list[int]) -> int:
    sql = "SELECT count(*) FROM memory_memory WHERE id = ANY(%s) AND embedding IS NULL"
    return int(faults.scalar(stack, sql, [ids]))


def op_row(stack: LocalStack, memory_id: int) -> int:
    sql = "SELECT id FROM palace_oplog WHERE target_kind = 'memory' AND target_id = %s ORDER BY id DESC"
    return int(faults.scalar(stack, sql, [memory_id]))


def backfill_runs(stack: LocalStack) -> list[dict[str, Any]]:
    with faults.database(stack) as conn:
        rows = conn.execute("SELECT detail FROM palace_oplog WHERE op = 'embeddings.backfill' ORDER BY id").fetchall()
    return [r[0] if isinstance(r[0], dict) else json.loads(r[0]) for r in rows]


def test_embedder_down_saves_say_so_and_a_backfill_killed_midway_loses_and_repeats_nothing(
    stack: LocalStack, embedder: FakeOpenAI, worker: dict[str, Any], healthy: None
) -> None:
    url, token = stack.url, stack.tokens[0]
    # 1. The embeddings endpoint fails at run time: every save lands without a vector and says so.
    embedder.standing(EMBEDDINGS_PATH, http_error(500))
    items = [
        {"content": f"Fault note {i}: the pager rota for team {i} lives on wiki page {300 + i}.", "kind": "fact"}
        for i in range(12)
    ]
    saved = []
    for start in (0, 6):
        result = faults.mcp_call(url, token, "memory_save", {"items": items[start : start + 6]})
        assert not result.is_error, result.content
        saved += result.structured_content["items"]
    ids = [item["id"] for item in saved]
    assert all(item["disposition"] == "accept" and item["degraded"] == ["embedder"] for item in saved), saved
    assert all("without an embedding" in item["hint"] for item in saved)
    assert without_vector(stack, ids) == 12

    # 2. It works again, slowly (0.4 s a call), and a backfill runs two memories a call; kill the whole worker once
    # some, not all, have their vector.
    embedder.standing(EMBEDDINGS_PATH, Slow(0.4, then=None))
    runs_before = len(backfill_runs(stack))
    faults.broker(stack).send_task("memory.embeddings_backfill", kwargs={"batch_size": 2})
    deadline = time.monotonic() + 60
    while without_vector(stack, ids) > 8:
        assert time.monotonic() < deadline, faults.worker_log(stack, WORKER)
        time.sleep(0.05)
    faults.kill_group(worker["proc"])
    embedded_before_kill = 12 - without_vector(stack, ids)
    assert 0 < embedded_before_kill < 12  # killed in the middle
    assert len(backfill_runs(stack)) == runs_before  # the killed run finished nothing it would record

    # 3. A new worker, and the backfill again (as the beat schedule sends it every 5 minutes).
    worker["proc"] = faults.start_worker(stack, WORKER)
    embedder.standing(EMBEDDINGS_PATH, None)
    faults.broker(stack).send_task("memory.embeddings_backfill", kwargs={"batch_size": 2})
    deadline = time.monotonic() + 60
    while len(backfill_runs(stack)) == runs_before:
        assert time.monotonic() < deadline, faults.worker_log(stack, WORKER)
        time.sleep(0.2)

    # No memory lost: all twelve have a vector. None embedded twice: the second run wrote exactly the ones the
    # killed run had not (its conditional UPDATE skipped the rest), and the rows are the twelve saved.
    assert without_vector(stack, ids) == 0
    (rerun,) = backfill_runs(stack)[runs_before:]
    assert rerun["count"] == 12 - embedded_before_kill
    assert set(rerun["memory_ids"]) < set(ids)
    assert faults.scalar(stack, "SELECT count(*) FROM memory_memory WHERE id = ANY(%s)", [ids]) == 12
    found = faults.mcp_call(url, token, "memory_search", {"query": "pager rota wiki page 305"})
    assert found.structured_content["mode"] == "hybrid"  # the vector arm runs again


def test_redis_restart_saves_land_and_live_updates_and_the_worker_come_back(
    stack: LocalStack, worker: dict[str, Any], healthy: None, restarted_redis: list[Any]
) -> None:
    url, token, base = stack.url, stack.tokens[0], stack.bases[0]
    session = faults.panel_login(base, "bench0", PASSWORD)
    panel = faults.PanelSocket(base, session)
    panel.connect()
    try:
        # Idle past redis-py's default 5 s read timeout first: the socket's blocking wait for events used to time
        # out there and take the consumer down (config/settings.py, CHANNEL_LAYERS).
        time.sleep(6)
        before = faults.save(url, token, "Redis drill: the panel shows this save live.")
        panel.wait_for('id="op-')  # control: live updates work before the fault
        assert before["disposition"] == "accept"

        # Redis goes away (killed, as a crash would): saves still land, the panel still answers.
        faults.redis_process(stack).kill()
        time.sleep(0.5)
        during = faults.save(url, token, "Redis drill: saved while Redis was down.")
        assert during["disposition"] == "accept"
        assert faults.scalar(stack, "SELECT content FROM memory_memory WHERE id = %s", [during["id"]]).startswith(
            "Redis drill: saved while"
        )
        status, _, page = faults.get(f"{base}/log/", session=session)
        assert status == 200 and f'id="op-{op_row(stack, during["id"])}"' in page  # the panel answers, with it

        # Redis is back (empty: the groups it held are gone): the page's socket reconnects, live updates resume.
        redis = start_redis(stack.home)
        assert redis is not None
        restarted_redis.append(redis)
        # An event published while the page was reconnecting is missed (the next page load shows it), so save
        # until one arrives live; the socket is only ever reconnected when it was closed.
        deadline = time.monotonic() + 30
        for attempt in range(100):
            after = faults.save(url, token, f"Redis drill: back after the restart, save {attempt}.")
            assert after["disposition"] == "accept"
            try:
                panel.wait_for(f'id="op-{op_row(stack, after["id"])}"', within=3)
                break
            except AssertionError:
                assert time.monotonic() < deadline, "live updates did not resume after Redis came back"
        faults.wait_for_worker(stack, WORKER)  # the worker reconnected to the broker by itself
    finally:
        panel.close()


def test_postgres_restart_answers_503_while_down_and_recovers_without_restarting_atrium(
    stack: LocalStack, healthy: None
) -> None:
    url, token, base = stack.url, stack.tokens[0], stack.bases[0]
    session = faults.panel_login(base, "bench0", PASSWORD)
    web_pids = {p.pid for p in faults.psutil.Process(stack.process.pid).children(recursive=True)}
    assert faults.get(f"{base}/api/v1/palaces", token=token)[0] == 200  # control
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}

    socket_dir = faults.postgres_stop(stack)
    try:
        status, kind, body = faults.get(f"{base}/api/v1/palaces", token=token)
        assert (status, kind) == (503, "application/json"), body
        assert json.loads(body)["error"]["code"] == "database_unavailable"
        status, kind, body = faults.get(f"{base}/log/", session=session)
        assert status == 503 and kind.startswith("text/html") and "database is unreachable" in body
        status, kind, body = faults.post_json(url, listing, token=token)
        assert (status, kind) == (503, "application/json"), body
        assert "database is unreachable" in json.loads(body)["error"]["message"]
    finally:
        faults.postgres_start(stack, socket_dir)

    assert faults.get(f"{base}/api/v1/palaces", token=token)[0] == 200
    assert faults.get(f"{base}/log/", session=session)[0] == 200
    status, _, body = faults.post_json(url, listing, token=token)
    assert status == 200 and "memory_save" in body
    assert faults.save(url, token, "Saved after PostgreSQL came back.")["disposition"] == "accept"
    assert stack.process.poll() is None
    assert {p.pid for p in faults.psutil.Process(stack.process.pid).children(recursive=True)} == web_pids
