"""Read replicas: which database a query goes to (Django's DATABASE_ROUTERS; replicas from DATABASE_REPLICA_URLS).

With no replica configured the router answers nothing (None) and Django does what it did before: every query on
`default`, no write watching, no Redis look-up.

With replicas, in order:

1. Every write goes to the primary (`default`). Raw SQL on `connection` goes there too: the router is not asked.
2. A read goes to the primary when any of these holds, else to the acting person's replica:
   - its model is not content (`REPLICA_APPS`: memories and what hangs off them, review cards, captures): tokens,
     sessions, OAuth grants, users and login throttling always read the primary, so a token or a session is valid
     the moment it exists, and so do palaces, memberships, rooms and the op log (`palace`), so who may see and write
     what is decided on the state it was written in (a project or member added a moment ago is found at once);
   - the primary is inside a transaction (`atomic`): reads there belong to it (a save's neighbours, claims,
     `select_for_update`) and see its own uncommitted writes;
   - nobody acts as a person (palace/rls.py): the system (Celery tasks, `atrium` commands, the admin) and nobody
     (`atrium shell`, an anonymous page) read the primary;
   - read-your-writes: that person wrote within ATRIUM_READ_YOUR_WRITES_SECONDS. Every write statement on the
     primary made while a person acts marks them: in this process at once (every thread sees it), and in Redis
     (`atrium:last-write:<user id>`, holding the time, expiring after the window) at once in autocommit or right
     after the commit, so another web process or host sees it before the writer's response is sent. Within the
     request that wrote, later reads are within the window of its last write. A search writes too (its evidence
     batch and access records), so a person's reads stay on the primary while they keep searching within the
     window; the replicas take everyone else's. Redis not answering counts as "wrote": the primary is always right.
     The window must exceed the replicas' replay lag (deploy/SCALING.md says how to measure it).
3. One person always reads from the same replica (by user id), so one page or one tool call sees one standby's state.

Row-level security holds on a replica as on the primary: a streaming standby is a physical copy (same role, same
policies), and palace/rls.py tells every open connection of the thread the acting context, replicas included (a new
connection is told when it opens), so a replica read acting as alice sees only alice's palaces.

Why this and not a library: django-multidb-router (maintained, Django 5 era) pins reads to the primary by HTTP method
and a per-browser cookie; every MCP call is a POST and agents keep no cookies, so it would either pin every agent
call or none, and its pin is per user agent, not per person across the web processes. django-replicated has had no
release since 2020. Django's own DATABASE_ROUTERS is the mechanism; Atrium knows who acts (palace/rls.py), so the
pin is per person. Raw SQL that reads content asks the router for its connection
(`connections[router.db_for_read(Memory)]` in memory/search/arms.py).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.backends.signals import connection_created

from config.dburls import REPLICA_PREFIX
from palace import rls

log = logging.getLogger(__name__)

PRIMARY = "default"
# The apps whose reads may be served by a replica: the palaces' content (not the palaces and their members).
REPLICA_APPS = frozenset({"memory", "review", "capture"})
# First words of the statements that change nothing; any other statement on the primary is taken as a write.
_READ_WORDS = frozenset(
    {"SELECT", "SHOW", "SET", "RESET", "EXPLAIN", "SAVEPOINT", "RELEASE", "ROLLBACK", "BEGIN", "COMMIT", "START"}
)
_DATA_CHANGE = re.compile(r"\b(INSERT|UPDATE|DELETE|MERGE)\b", re.IGNORECASE)
MARK_KEY = "atrium:last-write:{user_id}"

_recent: dict[int, float] = {}  # user id -> time.monotonic() of the last write this process saw them make
_recent_lock = threading.Lock()
_redis_client: Any = None


def replica_aliases() -> list[str]:
    return [alias for alias in connections.settings if alias.startswith(REPLICA_PREFIX)]


def _window() -> float:
    return float(settings.ATRIUM_READ_YOUR_WRITES_SECONDS)


def _redis() -> Any:
    global _redis_client  # one client (a thread-safe pool) per process
    if _redis_client is None:
        import redis

        # Short timeouts: a Redis that hangs must not hold every read; the answer is then "the primary".
        _redis_client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=0.5, socket_connect_timeout=0.5)
    return _redis_client


def wrote_recently(user_id: int) -> bool:
    """Did this person write within the window, in this process or (per Redis) in any other?"""
    window = _window()
    if window <= 0:
        return False
    seen = _recent.get(user_id)
    if seen is not None and time.monotonic() - seen < window:
        return True
    try:
        return bool(_redis().exists(MARK_KEY.format(user_id=user_id)))
    except Exception as exc:
        log.warning("read-your-writes: Redis did not answer (%s); reading from the primary", exc)
        return True


def _note(user_id: int) -> None:
    now = time.monotonic()
    with _recent_lock:
        _recent[user_id] = now
        if len(_recent) > 10_000:  # forget the marks past their window
            for key in [k for k, seen in _recent.items() if now - seen >= _window()]:
                del _recent[key]


class _Publish:
    """After a commit: mark the person in this process and in Redis (named, so one transaction registers one)."""

    def __init__(self, user_id: int) -> None:
        self.atrium_user_id = user_id

    def __call__(self) -> None:
        _note(self.atrium_user_id)
        window_ms = max(1, round(_window() * 1000))
        try:
            _redis().set(MARK_KEY.format(user_id=self.atrium_user_id), repr(time.time()), px=window_ms)
        except Exception as exc:
            log.warning("read-your-writes: could not mark user #%s in Redis (%s)", self.atrium_user_id, exc)


def is_write(sql: object) -> bool:
    """Does this statement change anything? Unsure counts as yes (it only costs a replica read or two)."""
    if not isinstance(sql, str):
        return True  # a composed statement: assume the worst
    words = sql.lstrip(" \t\r\n(").split(None, 1)
    if not words:
        return True
    first = words[0].upper()
    if first == "WITH":  # a CTE writes only if one of its parts does (search's entity look-up is a read)
        return _DATA_CHANGE.search(sql) is not None
    return first not in _READ_WORDS


class WriteWatch:
    """An execute wrapper on the primary's connections: marks the acting person after each write statement."""

    def __call__(self, execute: Callable[..., Any], sql: Any, params: Any, many: bool, context: dict[str, Any]) -> Any:
        result = execute(sql, params, many, context)
        user_id = rls.current().user_id
        if user_id is not None and is_write(sql):
            conn = context["connection"]
            _note(user_id)
            if not conn.in_atomic_block:
                _Publish(user_id)()
            elif not any(getattr(entry[1], "atrium_user_id", None) == user_id for entry in conn.run_on_commit):
                conn.on_commit(_Publish(user_id))
        return result


def watch_writes(connection: Any) -> None:
    """Install the write watch on a primary connection wrapper (once). First in the list: Django's
    `execute_wrapper()` blocks (the REST deadline) pop theirs from the end."""
    if not any(isinstance(wrapper, WriteWatch) for wrapper in connection.execute_wrappers):
        connection.execute_wrappers.insert(0, WriteWatch())


def _on_connection_created(sender: Any, connection: Any, **kwargs: Any) -> None:
    if connection.alias == PRIMARY and replica_aliases():
        watch_writes(connection)


connection_created.connect(_on_connection_created, dispatch_uid="atrium.dbrouter")


def read_alias() -> str:
    """Where a content read goes now (rule 2 above, minus the model test)."""
    replicas = replica_aliases()
    if not replicas or connections[PRIMARY].in_atomic_block:
        return PRIMARY
    user_id = rls.current().user_id
    if user_id is None or wrote_recently(user_id):
        return PRIMARY
    return replicas[user_id % len(replicas)]


class ReplicaRouter:
    """DATABASE_ROUTERS entry (config/settings.py); inert without replicas."""

    def db_for_read(self, model: type[Any], **hints: Any) -> str | None:
        if not replica_aliases():
            return None
        if model._meta.app_label not in REPLICA_APPS:
            return PRIMARY
        return read_alias()

    def db_for_write(self, model: type[Any], **hints: Any) -> str | None:
        return PRIMARY if replica_aliases() else None

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool | None:
        # A row read from a replica is the primary's row: relating it to one from the primary is fine.
        replicas = replica_aliases()
        if replicas and {obj1._state.db, obj2._state.db} <= {PRIMARY, None, *replicas}:
            return True
        return None

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        return False if db.startswith(REPLICA_PREFIX) else None
