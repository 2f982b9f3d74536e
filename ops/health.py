"""Honest health: every figure is measured now, or reported as unknown with the reason. Never a healthy default.

One report for every door: the REST route (GET /api/v1/health) and the panel's health ring both call
`health_report()`.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import redis
from celery import Celery
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memory.embeddings import embedder_status
from memory.models import Memory
from palace.rls import acting_as_system


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
        cur.execute("SELECT version(), (SELECT extversion FROM pg_extension WHERE extname = 'vector')")
        version, vector = cur.fetchone()
    return {
        "ok": True,
        "server": version.split(" on ")[0],
        "pgvector": vector,
        "embedded": bool(settings.ATRIUM_EMBEDDED_POSTGRES),
    }


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
    replies = _broker_app().control.ping(timeout=1.0) or []
    workers = sorted(name for reply in replies for name in reply)
    if not workers:
        return {"ok": False, "workers": [], "reason": "no worker answered a ping within 1 s"}
    return {"ok": True, "workers": workers}


def _memory_counts() -> dict[str, Any]:
    # Server-wide figures, counted by the server itself (row-level security would show a caller only their own).
    with acting_as_system("health"):
        live = Memory.objects.exclude(status=Memory.Status.FORGOTTEN)
        return {"ok": True, "total": live.count(), "without_vector": live.filter(embedding__isnull=True).count()}


def health_report() -> dict[str, Any]:
    database = _check(_database)
    report: dict[str, Any] = {"database": database}
    report["migrations"] = _check(_migrations) if database["ok"] else {"ok": None, "reason": "database unreachable"}
    report["redis"] = _check(_redis)
    report["celery"] = _check(lambda: _celery(bool(report["redis"]["ok"])))
    embedder = embedder_status()
    report["embedder"] = {**embedder, "ok": {"loaded": True, "failed": False}.get(str(embedder["state"]))}
    report["memories"] = _check(_memory_counts) if database["ok"] else {"ok": None, "reason": "database unreachable"}
    states = [part.get("ok") for part in report.values()]
    report["status"] = "ok" if all(s is True for s in states) else ("down" if database["ok"] is False else "degraded")
    return report
