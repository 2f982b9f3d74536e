"""`atrium bench mcp --clients C --seconds S [--url URL --token T] [--json]`: concurrent official MCP clients.

1. Without `--url`, start a real server: `atrium up --no-worker` on a free port in a temporary ATRIUM_HOME, and
   create one user and write token per client there (`atrium shell`). With `--url`, use that server and the
   tokens given with `--token` (repeatable; clients share them round-robin).
2. C clients (the official `mcp.Client`, protocol 2026-07-28, each its own HTTP connection pool) call
   `memory_save` and `memory_search` alternately for S seconds, each save a distinct sentence.
3. Report throughput, p50/p95 latency per tool, errors (tool errors and exceptions), and the overhead of a
   tools/call beyond the service call: the client-side latency minus the service time the server measured around
   the service itself (returned in the result's `_meta`, see api/mcp/base.py).
4. Every acknowledged save (accept, defer or merge) is then read back with `memory_examine` by the client that
   wrote it; the report says how many were readable.
"""

from __future__ import annotations

import argparse
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

from api.mcp.base import SERVICE_MS_META

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
    ms: float
    service_ms: float | None


@dataclass
class ClientStats:
    samples: list[Sample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    saved: list[int] = field(default_factory=list)
    missing: int = 0  # acknowledged saves not readable afterwards


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[index], 2)


SETUP = """
import json
from api.tokens import token_create
from palace.actors import Actor
from palace.services import user_create
actor = Actor.for_system("atrium bench mcp")
tokens = []
for i in range({n}):
    user = user_create(username=f"bench{{i}}", email="", password=None, is_admin=False, actor=actor)
    tokens.append(token_create(user=user, label="bench", scope="write", actor=actor)[1])
print("TOKENS=" + json.dumps(tokens))
"""


@contextlib.contextmanager
def local_server(clients: int) -> Iterator[tuple[str, list[str]]]:
    """`atrium up` in a throwaway ATRIUM_HOME on a free port, with one user and token per client."""
    home = Path(tempfile.mkdtemp(prefix="atrium-bench-"))
    home.chmod(0o755)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "ATRIUM_EMBEDDED_REDIS"}}
    env |= {"ATRIUM_HOME": str(home), "ATRIUM_EMBEDDED_POSTGRES": "", "ATRIUM_REVIEW_ENROL": "0"}
    atrium = [sys.executable, "-m", "config.cli"]
    log = (home / "up.log").open("wb")
    up = subprocess.Popen(
        [*atrium, "up", "--port", str(port), "--no-worker"], env=env, stdout=log, stderr=log, start_new_session=True
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            if up.poll() is not None:
                raise RuntimeError(f"atrium up exited: {(home / 'up.log').read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=1) as response:  # noqa: S310 (http only)
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("atrium up did not become ready in 180 s")
            time.sleep(0.5)
        made = subprocess.run(
            [*atrium, "shell", "-c", SETUP.format(n=clients)], env=env, capture_output=True, text=True, check=False
        )
        line = next((x for x in made.stdout.splitlines() if x.startswith("TOKENS=")), None)
        if line is None:
            raise RuntimeError(f"could not create bench users: {made.stderr[-2000:]}")
        yield f"{base}/mcp", json.loads(line.removeprefix("TOKENS="))
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


def _sentence(rng: random.Random, client: int, n: int) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(10))
    return f"Bench client {client} note {n}: the {words} step was checked at {rng.randint(1000, 9999)}."


async def _client(index: int, url: str, token: str, stop_at: float, stats: ClientStats) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    rng = random.Random(index)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(60.0)) as http,
        Client(streamable_http_client(url, http_client=http), mode="auto") as client,
    ):
        n = 0
        args: dict[str, Any]
        while time.perf_counter() < stop_at:
            n += 1
            if n % 2:
                tool, args = "memory_save", {"content": _sentence(rng, index, n), "kind": "fact"}
            else:
                tool, args = "memory_search", {"query": " ".join(rng.choice(WORDS) for _ in range(3)), "limit": 5}
            started = time.perf_counter()
            try:
                result = await client.call_tool(tool, args)
            except Exception as exc:  # a bench counts failures; it does not stop on them
                stats.errors.append(f"{tool}: {type(exc).__name__}: {exc}")
                continue
            elapsed = (time.perf_counter() - started) * 1000
            if result.is_error:
                stats.errors.append(f"{tool}: {' '.join(getattr(b, 'text', '') for b in result.content)[:200]}")
                continue
            meta = result.meta or {}
            service = meta.get(SERVICE_MS_META)
            stats.samples.append(Sample(tool, elapsed, float(service) if service is not None else None))
            if tool == "memory_save":
                item = (result.structured_content or {})["items"][0]
                if item["disposition"] != "drop":
                    stats.saved.append(item["mergedInto"] or item["id"])
        # Read back every acknowledged save through the same door.
        missing = 0
        ids = sorted(set(stats.saved))
        for start in range(0, len(ids), 16):
            result = await client.call_tool("memory_examine", {"ids": ids[start : start + 16]})
            missing += len((result.structured_content or {}).get("notFound", [])) if not result.is_error else 16
        if missing:
            stats.errors.append(f"{missing} acknowledged save(s) not readable afterwards")
        stats.missing = missing


async def _drive(url: str, tokens: list[str], clients: int, seconds: float) -> tuple[list[ClientStats], float]:
    stats = [ClientStats() for _ in range(clients)]
    started = time.perf_counter()
    stop_at = started + seconds
    await asyncio.gather(*(_client(i, url, tokens[i % len(tokens)], stop_at, stats[i]) for i in range(clients)))
    return stats, max(seconds, time.perf_counter() - started)


def measure(*, url: str, tokens: list[str], clients: int, seconds: float) -> dict[str, Any]:
    stats, _ = asyncio.run(_drive(url, tokens, clients, seconds))
    samples = [s for c in stats for s in c.samples]
    per_tool: dict[str, Any] = {}
    for tool in ("memory_save", "memory_search"):
        mine = [s for s in samples if s.tool == tool]
        overhead = [s.ms - s.service_ms for s in mine if s.service_ms is not None]
        per_tool[tool] = {
            "calls": len(mine),
            "p50_ms": _percentile([s.ms for s in mine], 0.5),
            "p95_ms": _percentile([s.ms for s in mine], 0.95),
            "service_p50_ms": _percentile([s.service_ms for s in mine if s.service_ms is not None], 0.5),
            "overhead_p50_ms": _percentile(overhead, 0.5),
            "overhead_p95_ms": _percentile(overhead, 0.95),
        }
    errors = [e for c in stats for e in c.errors]
    acknowledged = sum(len(set(c.saved)) for c in stats)
    missing = sum(c.missing for c in stats)
    return {
        "clients": clients,
        "seconds": seconds,
        "url": url,
        "calls": len(samples),
        "throughput_per_s": round(len(samples) / seconds, 1),
        "errors": len(errors),
        "error_examples": errors[:5],
        "tools": per_tool,
        "saves_acknowledged": acknowledged,
        "saves_readable": acknowledged - missing,
        "overhead_note": "client-side tools/call latency minus the service time measured in the server",
    }


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="atrium bench mcp")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--url", default=None, help="a running server's MCP URL (default: start one)")
    parser.add_argument("--token", action="append", default=[], help="write token(s) for --url")
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv or [])


def run(
    *,
    clients: int | None = None,
    seconds: float | None = None,
    url: str | None = None,
    tokens: list[str] | None = None,
    json: bool = False,
    argv: list[str] | None = None,
    as_json: bool = False,
    stdout: Any = None,
) -> dict[str, Any] | None:
    """Run the benchmark; print a report (or one JSON object with `json`/`as_json`). See the module docstring."""
    args = _parse(argv)
    clients = clients or args.clients
    seconds = seconds or args.seconds
    url = url or args.url
    tokens = tokens or args.token
    want_json = json or as_json or args.json
    if not 1 <= clients <= 500 or not 0 < seconds <= 3600:
        raise SystemExit("--clients must be 1–500 and --seconds 0–3600")
    if url and not tokens:
        raise SystemExit("--url needs at least one --token (a write token of that server)")
    if url:
        report = measure(url=url, tokens=tokens, clients=clients, seconds=seconds)
        report["server"] = "given by --url"
    else:
        with local_server(clients) as (local_url, local_tokens):
            report = measure(url=local_url, tokens=local_tokens, clients=clients, seconds=seconds)
        report["server"] = "atrium up --no-worker in a temporary ATRIUM_HOME (embedded PostgreSQL and Redis)"
    out = stdout or sys.stdout
    if want_json:
        out.write(_json_dumps(report) + "\n")
        return None
    out.write(_human(report))
    return None


def _json_dumps(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2)


def _human(report: dict[str, Any]) -> str:
    lines = [
        f"MCP bench: {report['clients']} clients × {report['seconds']:g} s against {report['url']}",
        f"  server: {report['server']}",
        f"  calls: {report['calls']}  throughput: {report['throughput_per_s']}/s  errors: {report['errors']}",
    ]
    for tool, figures in report["tools"].items():
        lines.append(
            f"  {tool}: n={figures['calls']} p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms; service p50 "
            f"{figures['service_p50_ms']} ms; tools/call overhead p50 {figures['overhead_p50_ms']} ms, "
            f"p95 {figures['overhead_p95_ms']} ms"
        )
    lines.append(f"  acknowledged saves readable afterwards: {report['saves_readable']}/{report['saves_acknowledged']}")
    lines += [f"  error: {e}" for e in report["error_examples"]]
    return "\n".join(lines) + "\n"
