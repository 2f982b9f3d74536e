"""`atrium bench mcp --clients C --seconds S [--url URL --token T] [--json]`: concurrent official MCP clients.

1. Without `--url`, start a real server: `atrium up` (web and the Celery worker with beat) on a free port in a
   temporary ATRIUM_HOME, and create one user and write token per client there (`atrium shell`). With `--url`, use
   that server and the tokens given with `--token` (repeatable; clients share them round-robin).
2. C clients (the official `mcp.Client`, protocol 2026-07-28, each its own HTTP connection pool) first warm up
   (one save and one search each, untimed: the client's tool listing, the embedder, first imports), then call
   `memory_save` and `memory_search` alternately for S seconds, each save a distinct sentence.
3. Report throughput, p50/p95 latency per tool, errors (tool errors and exceptions), and the overhead of a
   tools/call beyond the service call, two ways:
   - server-side: the response's `Server-Timing` header (api/mcp/timing.py) gives the time from the request
     reaching the application to the response starting (`total`) and the time in the service call (`service`);
     `total − service` is what the server spent on the protocol (also without `wait`, the time queued for an ORM
     thread);
   - client-side: the call's latency as the client saw it minus the same service time — this adds the HTTP round
     trip, the client library's own work (it validates every result against the tool's outputSchema) and, with
     more clients than cores, queueing.
   The machine's load average before and after is part of the report: on a shared machine figures mean little
   without it.
4. Every acknowledged save (accept, defer or merge; warm-up saves too) is then read back with `memory_examine` by
   the client that wrote it; the report says how many were readable, and `lost` how many were not. `errors` counts
   tool errors and exceptions (timed or not); `p50_ms` / `p95_ms` are over every timed call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ops.embedded import private_home

# The result `_meta` key in which the server reports a tool's service time (api/mcp/runner.py; a test pins the two
# equal). The bench talks to the server over HTTP only, so it names the key instead of importing the server.
SERVICE_MS_META = "dev.atrium/service_ms"
WARMUP_CALLS = 2  # per client, before the timed window: one save, one search
GOAL_OVERHEAD_MS = 10.0

WORDS = [
    "deploy",
    "review",
    "cache",
    "schema",
    "index",
    "token",
    "palace",
    "corridor",
    "budget",
    "release",
    "migration",
    "worker",
    "queue",
    "latency",
    "backup",
    "replica",
    "vector",
    "embedding",
    "search",
    "ledger",
    "placard",
    "room",
    "slot",
    "tour",
    "route",
    "decision",
    "preference",
    "postgres",
    "redis",
    "celery",
    "uvicorn",
    "django",
    "ninja",
    "htmx",
    "panel",
    "metric",
    "alert",
    "incident",
    "runbook",
    "rollback",
]


@dataclass
class Sample:
    tool: str
    ms: float  # client-observed: call_tool() from start to result
    service_ms: float | None  # the service call, measured by the server
    server_ms: float | None  # Server-Timing total: request reached the app -> response started
    wait_ms: float | None  # Server-Timing wait: queued for a free ORM thread
    auth_ms: float | None  # Server-Timing auth: bearer token verification


@dataclass
class ClientStats:
    samples: list[Sample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    saved: list[int] = field(default_factory=list)
    missing: int = 0  # acknowledged saves not readable afterwards
    last_done: float = 0.0  # perf_counter when its last timed call ended
    warmed: bool = False


def _free_ports(n: int = 1) -> int:
    """The first of `n` consecutive free loopback ports (`atrium up --web N` listens on port … port+N−1)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            first = int(s.getsockname()[1])
        if first + n > 65535:
            continue
        ok = True
        for port in range(first + 1, first + n):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return first
    raise RuntimeError(f"no {n} consecutive free ports on 127.0.0.1")


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[index], 2)


SETUP = """
import json
from accounts.tokens import token_create
from palace.actors import Actor
from palace.rls import acting_as_system
from palace.services import user_create
actor = Actor.for_system("atrium bench mcp")
tokens = []
with acting_as_system("atrium bench mcp"):  # `atrium shell` acts as nobody: row-level security hides every palace
    for i in range({n}):
        user = user_create(username=f"bench{{i}}", email="", password={password!r}, is_admin=False, actor=actor)
        tokens.append(token_create(user=user, label="bench", scope="write", actor=actor)[1])
print("TOKENS=" + json.dumps(tokens))
"""


@dataclass
class LocalStack:
    """A running `atrium up` in a throwaway ATRIUM_HOME: its web base URLs (one per `--web` process), the
    environment its commands share, and write tokens of users `bench0`, `bench1`, …"""

    home: Path
    env: dict[str, str]
    bases: list[str]
    tokens: list[str]
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"{self.bases[0]}/mcp"

    def atrium(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """Run another `atrium` command against the same database and Redis."""
        return subprocess.run(
            [sys.executable, "-m", "config.cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )

    def log(self) -> str:
        return (self.home / "up.log").read_text(errors="replace")


def _wait_healthz(base: str, up: subprocess.Popen[bytes], home: Path, deadline: float) -> None:
    while True:
        if up.poll() is not None:
            raise RuntimeError(f"atrium up exited: {(home / 'up.log').read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=1) as response:  # noqa: S310 (http only)
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            tail = (home / "up.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"atrium up did not become ready: {tail}")
        time.sleep(0.5)


@contextlib.contextmanager
def local_stack(
    users: int,
    *,
    worker: bool = True,
    web: int = 1,
    password: str | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[LocalStack]:
    """`atrium up [--web N] [--no-worker]` in a throwaway ATRIUM_HOME on free ports (embedded PostgreSQL and Redis),
    with `users` users (`password`, if given, lets them log in to the panel) and a write token each."""
    home = Path(tempfile.mkdtemp(prefix="atrium-bench-"))
    private_home(home)
    port = _free_ports(web)
    child_env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "ATRIUM_EMBEDDED_REDIS"}}
    child_env |= {"ATRIUM_HOME": str(home), "ATRIUM_EMBEDDED_POSTGRES": "", "ATRIUM_REVIEW_ENROL": "0"}
    child_env |= env or {}
    argv = [sys.executable, "-m", "config.cli", "up", "--port", str(port), "--web", str(web)]
    log = (home / "up.log").open("wb")
    up = subprocess.Popen(
        [*argv, *([] if worker else ["--no-worker"])], env=child_env, stdout=log, stderr=log, start_new_session=True
    )
    try:
        bases = [f"http://127.0.0.1:{port + i}" for i in range(web)]
        deadline = time.monotonic() + 180
        for base in bases:
            _wait_healthz(base, up, home, deadline)
        stack = LocalStack(home=home, env=child_env, bases=bases, tokens=[], process=up)
        made = stack.atrium("shell", "-c", SETUP.format(n=users, password=password))
        line = next((x for x in made.stdout.splitlines() if x.startswith("TOKENS=")), None)
        if line is None:
            raise RuntimeError(f"could not create bench users: {made.stderr[-2000:]}")
        stack.tokens = json.loads(line.removeprefix("TOKENS="))
        yield stack
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(up.pid, signal.SIGTERM)
        try:
            up.wait(60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(up.pid, signal.SIGKILL)
        log.close()
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def local_server(clients: int, *, worker: bool = True) -> Iterator[tuple[str, list[str]]]:
    """`atrium up` (with its worker unless `worker` is false) in a throwaway ATRIUM_HOME on a free port, with one
    user and token per client: (MCP URL, tokens)."""
    with local_stack(clients, worker=worker) as stack:
        yield stack.url, stack.tokens


def _sentence(rng: random.Random, client: int, n: int) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(10))
    return f"Bench client {client} note {n}: the {words} step was checked at {rng.randint(1000, 9999)}."


def parse_server_timing(value: str | None) -> dict[str, float]:
    """`{"total": 12.4, "service": 9.9, ...}` from a Server-Timing header value (unknown or malformed parts are
    skipped). The header's parts are described in api/mcp/timing.py, which writes it."""
    out: dict[str, float] = {}
    for part in (value or "").split(","):
        name, _, params = part.strip().partition(";")
        for param in params.split(";"):
            key, _, number = param.strip().partition("=")
            if key == "dur" and name:
                with contextlib.suppress(ValueError):
                    out[name.strip()] = float(number)
    return out


def _rpc_method(request: Any) -> str | None:
    """The JSON-RPC method of an MCP POST (the 2026-07-28 `Mcp-Method` header, else the body)."""
    method = request.headers.get("mcp-method")
    if method:
        return str(method)
    with contextlib.suppress(Exception):
        body = json.loads(request.content)
        return str(body.get("method")) if isinstance(body, dict) else None
    return None


def _sample(tool: str, ms: float, result: Any, server_timing: str | None) -> Sample:
    timing = parse_server_timing(server_timing)
    service = timing.get("service")
    if service is None:  # an older server: only the result's _meta carries the service time
        meta = (result.meta or {}).get(SERVICE_MS_META)
        service = float(meta) if meta is not None else None
    return Sample(tool, ms, service, timing.get("total"), timing.get("wait"), timing.get("auth"))


async def _client(
    index: int, url: str, token: str, start_at: asyncio.Event, stop_at: list[float], stats: ClientStats, transport: Any
) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    rng = random.Random(index)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    seen: dict[str, str | None] = {}

    async def keep_server_timing(response: Any) -> None:
        # Each client makes one call at a time, so the last tools/call response is the one just awaited.
        if _rpc_method(response.request) == "tools/call":
            seen["tools/call"] = response.headers.get("server-timing")

    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx2.Timeout(60.0),
            transport=transport,
            event_hooks={"response": [keep_server_timing]},
        ) as http,
        Client(streamable_http_client(url, http_client=http), mode="auto") as client,
    ):
        n = 0

        async def call(tool: str, args: dict[str, Any], *, timed: bool) -> None:
            seen["tools/call"] = None
            started = time.perf_counter()
            try:
                result = await client.call_tool(tool, args)
            except Exception as exc:  # a bench counts failures; it does not stop on them
                stats.errors.append(f"{tool}: {type(exc).__name__}: {exc}")
                return
            elapsed = (time.perf_counter() - started) * 1000
            if result.is_error:
                stats.errors.append(f"{tool}: {' '.join(getattr(b, 'text', '') for b in result.content)[:200]}")
                return
            if timed:
                stats.samples.append(_sample(tool, elapsed, result, seen.get("tools/call")))
            if tool == "memory_save":
                item = (result.structured_content or {})["items"][0]
                if item["disposition"] != "drop":
                    stats.saved.append(item["mergedInto"] or item["id"])

        def next_call() -> tuple[str, dict[str, Any]]:
            nonlocal n
            n += 1
            if n % 2:
                return "memory_save", {"content": _sentence(rng, index, n), "kind": "fact"}
            return "memory_search", {"query": " ".join(rng.choice(WORDS) for _ in range(3)), "limit": 5}

        # Warm-up, not timed: the tool listing the client validates results against, the embedder, first imports.
        for _ in range(WARMUP_CALLS):
            await call(*next_call(), timed=False)
        stats.warmed = True
        await start_at.wait()
        while time.perf_counter() < stop_at[0]:
            await call(*next_call(), timed=True)
        stats.last_done = time.perf_counter()


async def _read_back(url: str, token: str, stats: ClientStats, transport: Any) -> None:
    """Read back every save the client saw acknowledged (warm-up saves too) through the same door, on a fresh
    connection, so a client that failed mid-run still has its saves checked. `missing` counts those not found."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    ids = sorted(set(stats.saved))
    if not ids:
        return
    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(60.0), transport=transport
        ) as http,
        Client(streamable_http_client(url, http_client=http), mode="auto") as client,
    ):
        for start in range(0, len(ids), 16):
            chunk = ids[start : start + 16]
            result = await client.call_tool("memory_examine", {"ids": chunk})
            if result.is_error:
                stats.errors.append("memory_examine: " + " ".join(getattr(b, "text", "") for b in result.content))
                stats.missing += len(chunk)
            else:
                stats.missing += len((result.structured_content or {}).get("notFound", []))


async def _drive(
    url: str, tokens: list[str], clients: int, seconds: float, transport: Any = None
) -> tuple[list[ClientStats], float]:
    stats = [ClientStats() for _ in range(clients)]
    start_at = asyncio.Event()
    stop_at = [0.0]
    tasks = [
        asyncio.create_task(_client(i, url, tokens[i % len(tokens)], start_at, stop_at, stats[i], transport))
        for i in range(clients)
    ]

    # The timed window opens when every client has warmed up (or failed).
    while not all(c.warmed or t.done() for c, t in zip(stats, tasks, strict=True)):
        await asyncio.sleep(0.01)
    started = time.perf_counter()
    stop_at[0] = started + seconds
    start_at.set()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    for client, outcome in zip(stats, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            client.errors.append(f"client failed: {type(outcome).__name__}: {outcome}")
    ended = max([c.last_done for c in stats if c.last_done] or [time.perf_counter()])
    readers = asyncio.Semaphore(8)

    async def read_back(i: int) -> None:
        async with readers:
            try:
                await _read_back(url, tokens[i % len(tokens)], stats[i], transport)
            except Exception as exc:  # nothing could be read: every acknowledged save of this client counts as lost
                stats[i].errors.append(f"read-back failed: {type(exc).__name__}: {exc}")
                stats[i].missing = len(set(stats[i].saved))

    await asyncio.gather(*(read_back(i) for i in range(clients)))
    return stats, max(ended - started, 1e-9)


def _figures(values: list[float]) -> dict[str, float | None]:
    return {"p50_ms": _percentile(values, 0.5), "p95_ms": _percentile(values, 0.95)}


def _overheads(samples: list[Sample]) -> dict[str, Any]:
    timed = [s for s in samples if s.service_ms is not None]
    served = [s for s in timed if s.server_ms is not None]
    return {
        # The server's own clock: request reached the app -> response started, minus the service call.
        "server": _figures([s.server_ms - s.service_ms for s in served]),  # type: ignore[operator]
        # The same without the wait for a free ORM thread (queueing behind other requests).
        "server_excluding_wait": _figures(
            [s.server_ms - s.service_ms - (s.wait_ms or 0.0) for s in served]  # type: ignore[operator]
        ),
        # The client's clock: call_tool() latency minus the service call (HTTP, client and server protocol work,
        # and any queueing in the server's event loop, its ORM threads or the CPU).
        "client": _figures([s.ms - s.service_ms for s in timed]),  # type: ignore[operator]
        "wait": _figures([s.wait_ms for s in served if s.wait_ms is not None]),
        "auth": _figures([s.auth_ms for s in served if s.auth_ms is not None]),
    }


def measure(*, url: str, tokens: list[str], clients: int, seconds: float, transport: Any = None) -> dict[str, Any]:
    load_before = _loadavg()
    stats, window = asyncio.run(_drive(url, tokens, clients, seconds, transport))
    load_after = _loadavg()
    samples = [s for c in stats for s in c.samples]
    per_tool: dict[str, Any] = {}
    for tool in ("memory_save", "memory_search"):
        mine = [s for s in samples if s.tool == tool]
        services = [s.service_ms for s in mine if s.service_ms is not None]
        per_tool[tool] = {
            "calls": len(mine),
            "p50_ms": _percentile([s.ms for s in mine], 0.5),
            "p95_ms": _percentile([s.ms for s in mine], 0.95),
            "service_p50_ms": _percentile(services, 0.5),
            "service_p95_ms": _percentile(services, 0.95),
            "overhead": _overheads(mine),
        }
    errors = [e for c in stats for e in c.errors]
    acknowledged = sum(len(set(c.saved)) for c in stats)
    missing = sum(c.missing for c in stats)
    overhead = _overheads(samples)
    cores = os.cpu_count() or 1
    server_p50 = overhead["server"]["p50_ms"]
    return {
        "clients": clients,
        "seconds": seconds,
        "window_s": round(window, 2),
        "url": url,
        "cores": cores,
        "load_average": {"before": load_before, "after": load_after},
        "queueing": (
            "none expected (1 client: one request at a time)"
            if clients == 1
            else f"included: {clients} clients on {cores} cores; client-side overhead and the server's wait "
            "contain time spent queued behind other requests"
        ),
        "calls": len(samples),
        "throughput_per_s": round(len(samples) / window, 1),
        "p50_ms": _percentile([s.ms for s in samples], 0.5),
        "p95_ms": _percentile([s.ms for s in samples], 0.95),
        "errors": len(errors),
        "lost": missing,
        "error_examples": errors[:5],
        "overhead": overhead,
        "tools": per_tool,
        "saves_acknowledged": acknowledged,
        "saves_readable": acknowledged - missing,
        "goal": {
            "server_overhead_p50_ms_at_most": GOAL_OVERHEAD_MS,
            "server_overhead_met": server_p50 is not None and server_p50 <= GOAL_OVERHEAD_MS,
            "zero_errors": not errors,
            "all_saves_readable": missing == 0,
        },
        "overhead_note": (
            "overhead = time beyond the service call. server: the server's Server-Timing total (request reached "
            "the app -> response started) minus its service time; client: call_tool() latency minus the same "
            "service time (adds HTTP, the client library's own work and any queueing)"
        ),
    }


def _loadavg() -> list[float] | None:
    with contextlib.suppress(OSError, AttributeError):
        return [round(x, 2) for x in os.getloadavg()]
    return None


def run_mcp_bench(
    *, clients: int, seconds: float, url: str | None, tokens: list[str], as_json: bool, stdout: Any = None
) -> None:
    """Run the benchmark and print a report (one JSON object with `as_json`). See the module docstring.

    `url` None starts a throwaway server; otherwise `tokens` are write tokens of the server at `url`."""
    if url:
        report = measure(url=url, tokens=tokens, clients=clients, seconds=seconds)
        report["server"] = "given by --url"
    else:
        with local_server(clients) as (local_url, local_tokens):
            report = measure(url=local_url, tokens=local_tokens, clients=clients, seconds=seconds)
        report["server"] = "atrium up (web and worker) in a temporary ATRIUM_HOME (embedded PostgreSQL and Redis)"
    out = stdout or sys.stdout
    out.write(_json_dumps(report) + "\n" if as_json else _human(report))


def _json_dumps(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2)


def _fig(figures: dict[str, Any]) -> str:
    return f"p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms"


def _human(report: dict[str, Any]) -> str:
    overhead = report["overhead"]
    goal = report["goal"]
    lines = [
        f"MCP bench: {report['clients']} clients × {report['seconds']:g} s against {report['url']}",
        f"  server: {report['server']}",
        f"  machine: {report['cores']} cores, load average {report['load_average']['before']} before, "
        f"{report['load_average']['after']} after",
        f"  queueing: {report['queueing']}",
        f"  calls: {report['calls']} in {report['window_s']} s  throughput: {report['throughput_per_s']}/s  "
        f"latency p50 {report['p50_ms']} ms, p95 {report['p95_ms']} ms  errors: {report['errors']}  "
        f"lost: {report['lost']}",
        "  tools/call overhead beyond the service call (all tools):",
        f"    server-side (Server-Timing total − service): {_fig(overhead['server'])}",
        f"    server-side without the wait for an ORM thread: {_fig(overhead['server_excluding_wait'])}",
        f"    client-side (call_tool latency − service): {_fig(overhead['client'])}",
        f"    of which waiting for an ORM thread: {_fig(overhead['wait'])}; token check: {_fig(overhead['auth'])}",
    ]
    for tool, figures in report["tools"].items():
        lines.append(
            f"  {tool}: n={figures['calls']} latency p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms; "
            f"service p50 {figures['service_p50_ms']} ms, p95 {figures['service_p95_ms']} ms; overhead server "
            f"{_fig(figures['overhead']['server'])}, client {_fig(figures['overhead']['client'])}"
        )
    lines.append(f"  acknowledged saves readable afterwards: {report['saves_readable']}/{report['saves_acknowledged']}")
    lines.append(
        f"  goal: server-side overhead p50 ≤ {goal['server_overhead_p50_ms_at_most']:g} ms "
        f"{'met' if goal['server_overhead_met'] else 'NOT met'}; errors "
        f"{'0' if goal['zero_errors'] else 'NOT 0'}; "
        f"saves readable {'all' if goal['all_saves_readable'] else 'NOT all'}"
    )
    lines += [f"  error: {e}" for e in report["error_examples"]]
    return "\n".join(lines) + "\n"
