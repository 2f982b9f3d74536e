"""Honest health: every figure is measured now, or reported as unknown with the reason. Never a healthy default.

One report for every door: the REST route (GET /api/v1/health) and the panel's health ring both read
`health_cached()`, the measured `health_report()` kept for ATRIUM_HEALTH_CACHE_SECONDS in this process. A lock makes
a burst of callers wait for one measurement instead of each opening a database connection and pinging the workers.

The overall status is `ok` only when every part is: the database answers and has pgvector, no migration is pending,
Redis answers, a Celery worker answers a ping, the embedder embeds a probe, and every live memory has a vector.
`down` when the database cannot be reached; `degraded` otherwise.

Strangers see `public_report()`: the status and each part's `ok`, nothing else (versions, migration names, worker
host names, counts and error text are for staff).
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

import redis
from celery import Celery
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memory.models import Memory
from memory.providers import embedder_probe
from palace.rls import acting_as_system

EMBEDDER_PROBE_SECONDS = 30.0  # how long one probe embedding stands for the embedder's state
PING_TIMEOUT = 1.0
VECTOR_EXTENSION = "vector"  # the extension whose presence the database part reports


def _check(fn: Any) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        result = fn()
    except Exception as exc:
        return {
            "ok": False,
            "reason": f"{type(exc).__name__}: {exc}"[:300],
            "ms": round((time.perf_counter() - started) * 1000, 1),
        }
    result.setdefault("ok", True)
    result["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return result


def _database() -> dict[str, Any]:
    with connection.cursor() as cur:
        cur.execute("SELECT version(), (SELECT extversion FROM pg_extension WHERE extname = %s)", [VECTOR_EXTENSION])
        version, vector = cur.fetchone()
    found = {
        "ok": vector is not None,
        "server": version.split(" on ")[0],
        "pgvector": vector,
        "embedded": bool(settings.ATRIUM_EMBEDDED_POSTGRES),
    }
    if vector is None:
        found["reason"] = "the pgvector extension is not installed: semantic search and embeddings cannot work"
    return found


def pending_migrations() -> list[str]:
    """The migrations not yet applied to the database, as app_label.name, in the order they would run."""
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]


def _migrations() -> dict[str, Any]:
    pending = pending_migrations()
    return {"ok": not pending, "pending": pending}


def _redis() -> dict[str, Any]:
    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)
    try:
        client.ping()
    finally:
        client.close()
    return {"ok": True, "embedded": bool(settings.ATRIUM_EMBEDDED_REDIS)}


@functools.cache
def _broker_app() -> Celery:
    """A Celery app on the configured broker, only to ping workers. Its own instance (not made current), so this
    module needs neither config.celery nor whichever app happens to be current in this process."""
    app = Celery("atrium-health", set_as_current=False)
    app.config_from_object("django.conf:settings", namespace="CELERY")
    return app


def _celery(redis_ok: bool) -> dict[str, Any]:
    if not redis_ok:
        return {"ok": None, "workers": None, "reason": "unknown: the broker (Redis) is unreachable"}
    replies = _broker_app().control.ping(timeout=PING_TIMEOUT) or []
    workers = sorted(name for reply in replies for name in reply)
    if not workers:
        return {"ok": False, "workers": [], "reason": f"no worker answered a ping within {PING_TIMEOUT:g} s"}
    return {"ok": True, "workers": workers}


def _memory_counts() -> dict[str, Any]:
    # Server-wide figures, counted by the server itself (row-level security would show a caller only their own).
    with acting_as_system("health"):
        live = Memory.objects.exclude(status=Memory.Status.FORGOTTEN)
        total, without = live.count(), live.filter(embedding__isnull=True).count()
    found: dict[str, Any] = {"ok": without == 0, "total": total, "without_vector": without}
    if without:
        found["reason"] = f"{without} memories have no embedding yet (semantic search misses them until a backfill)"
    return found


def _embedder() -> dict[str, Any]:
    # `loading`: this process started loading it at start-up (memory.providers.embedder_warm) and nothing has gone
    # wrong: ok, with the state and reason saying so, so a monitor does not alert on every restart (issue 26). A
    # load that fails turns `failed` (not ok); `not_loaded` (no warm-up in this process) stays unknown.
    embedder = embedder_probe(max_age=EMBEDDER_PROBE_SECONDS)
    return {**embedder, "ok": {"loaded": True, "loading": True, "failed": False}.get(str(embedder["state"]))}


def _release_connection() -> None:
    """Hand this thread's database connection back before the slow, database-free checks (the worker ping waits
    up to PING_TIMEOUT). Inside a transaction (a test's) it must stay open."""
    if not connection.in_atomic_block:
        connection.close()


def health_report() -> dict[str, Any]:
    """Measure every part now (no cache). The database parts run first; the connection is closed before Redis, the
    worker ping and the embedder probe, so a waiting health check never holds one."""
    database = _check(_database)
    reachable = "server" in database  # it answered (with or without pgvector)
    unreachable = {"ok": None, "reason": "database unreachable"}
    report: dict[str, Any] = {"database": database}
    report["migrations"] = _check(_migrations) if reachable else unreachable
    report["memories"] = _check(_memory_counts) if reachable else unreachable
    _release_connection()
    report["redis"] = _check(_redis)
    report["celery"] = _check(lambda: _celery(bool(report["redis"]["ok"])))
    report["embedder"] = _embedder()
    states = [part.get("ok") for part in report.values()]
    report["status"] = "ok" if all(s is True for s in states) else ("degraded" if reachable else "down")
    return report


_cache_lock = threading.Lock()
_cached: tuple[float, dict[str, Any]] | None = None


def health_cached(*, max_age: float | None = None) -> dict[str, Any]:
    """The latest report when it is under `max_age` seconds (ATRIUM_HEALTH_CACHE_SECONDS) old, else a new one. One
    measurement at a time per process: callers that arrive while it runs wait for it and share it."""
    global _cached
    if max_age is None:
        max_age = float(settings.ATRIUM_HEALTH_CACHE_SECONDS)
    with _cache_lock:
        if _cached is not None and time.monotonic() - _cached[0] < max_age:
            return _cached[1]
        report = health_report()
        _cached = (time.monotonic(), report)
        return report


def health_cache_clear() -> None:
    global _cached
    with _cache_lock:
        _cached = None


def public_report(report: dict[str, Any]) -> dict[str, Any]:
    """What anyone may see: the overall status and each part's ok (true, false, or null for unknown)."""
    public: dict[str, Any] = {"status": report.get("status", "unknown")}
    for name, part in report.items():
        if isinstance(part, dict):
            public[name] = {"ok": part.get("ok")}
    return public
