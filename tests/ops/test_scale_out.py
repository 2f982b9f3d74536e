"""The production shape of deploy/SCALING.md without Docker: `atrium up --web 2` runs two uvicorn processes on
consecutive loopback ports and a separate Celery worker, on one PostgreSQL and one Redis.

- the official MCP client's calls alternate between the two processes (stateless mode: nothing sticks a client to
  one), and what one process saved the other finds;
- a write through one process shows live on a panel websocket connected to the other (the Redis channel layer);
- the worker's jobs act on what both processes wrote (memories saved through each while the embeddings endpoint was
  down get their vector from one backfill run).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import psutil
import pytest

from ops.bench import LocalStack, local_stack
from tests.fakes.openai_server import EMBEDDINGS_PATH, FakeOpenAI, http_error
from tests.ops import faults

pytestmark = pytest.mark.slow

PASSWORD = "scale-pw-1234"


@pytest.fixture(scope="module")
def embedder() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="module")
def stack(embedder: FakeOpenAI) -> Iterator[LocalStack]:
    env = faults.fake_embedder_env(embedder.base_url)
    with local_stack(1, web=2, password=PASSWORD, env=env) as running:
        yield running


def test_two_web_processes_and_a_worker_serve_one_team(stack: LocalStack, embedder: FakeOpenAI) -> None:
    first, second = stack.bases
    token = stack.tokens[0]
    up = psutil.Process(stack.process.pid)
    listening = {
        conn.laddr.port: proc.pid
        for proc in up.children(recursive=True)
        for conn in proc.net_connections(kind="tcp")
        if conn.status == psutil.CONN_LISTEN
    }
    ports = [int(base.rsplit(":", 1)[1]) for base in stack.bases]
    assert ports[1] == ports[0] + 1 and len({listening[p] for p in ports}) == 2  # two processes, consecutive ports
    assert "2 processes on ports" in stack.log()

    # MCP: calls alternate between the processes; each finds what the other saved.
    saved = {}
    for i, base in enumerate([first, second, first, second]):
        item = faults.save(f"{base}/mcp", token, f"Scale note {i}: replica {base[-5:]} wrote the {i}th runbook entry.")
        assert item["disposition"] == "accept"
        saved[item["id"]] = base
    for memory_id, writer in saved.items():
        reader = second if writer == first else first
        found = faults.mcp_call(f"{reader}/mcp", token, "memory_examine", {"ids": [memory_id]})
        assert not found.is_error and found.structured_content["notFound"] == [], found.content

    # Live: a panel socket on the second process hears a write through the first.
    session = faults.panel_login(first, "bench0", PASSWORD)  # a session made by one process works on the other
    panel = faults.PanelSocket(second, session)
    panel.connect()
    try:
        item = faults.save(f"{first}/mcp", token, "Scale note: written through the first process, seen on the second.")
        sql = "SELECT id FROM palace_oplog WHERE target_kind = 'memory' AND target_id = %s"
        row = faults.scalar(stack, sql, [item["id"]])
        assert f'id="op-{row}"' in panel.wait_for(f'id="op-{row}"')
    finally:
        panel.close()

    # Jobs: one backfill on the worker gives a vector to what each process saved while embeddings were down.
    embedder.standing(EMBEDDINGS_PATH, http_error(500))
    try:
        down = [
            faults.save(f"{base}/mcp", token, f"Scale note: saved through {base} with embeddings down.")["id"]
            for base in stack.bases
        ]
    finally:
        embedder.standing(EMBEDDINGS_PATH, None)
    sql = "SELECT count(*) FROM memory_memory WHERE id = ANY(%s) AND embedding IS NULL"
    assert faults.scalar(stack, sql, [down]) == 2
    faults.broker(stack).send_task("memory.embeddings_backfill")
    deadline = time.monotonic() + 60
    while faults.scalar(stack, sql, [down]) != 0:
        assert time.monotonic() < deadline, stack.log()[-3000:]
        time.sleep(0.2)
