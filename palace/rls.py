"""Row-level security's acting context: whose rows PostgreSQL lets a connection see and change.

Every palace-scoped table carries policies (palace/migrations/0004_row_level_security and the matching migrations of
`memory` and `review`) that read two session settings of the connection:

- `atrium.user_id`: the acting person. A row is visible when its palace is one they are a member of, and writable
  when they are an owner or editor there (access records and op rows only need the palace to be readable: viewers
  write those when they read or assess). Evidence batches belong to their user.
- `atrium.system`: a non-empty reason (`task:memory.decay`, `command:createuser`, `admin:alice`) when the server
  itself acts (jobs, commands, the Django admin for staff): every row is visible.

Neither set, every covered table looks empty: a query that forgets its filter returns nothing.

The doors set it with the same code that resolves the caller: the request middleware (panel and REST sessions, the
admin as system), the REST token auth (api/auth.py), the MCP runner, the websocket consumer, Celery's task signals
and the `atrium` command (system, except `shell` and `dbshell`, which get no context). `acting_as(user)` and
`acting_as_system(reason)` nest: each restores the context it found, also on error.

The context is kept per thread and written to each of the thread's connections (Django may hand one thread several
wrappers, one per async context). It is a session setting (`set_config(..., false)`), not a transaction-local one
(`SET LOCAL` / `set_config(..., true)`): Django runs in autocommit, so a transaction-local value would vanish after
the first statement unless every door ran in one transaction, and the system's doors cannot (`atrium up`, migrations
with non-atomic steps, jobs that commit in batches and claim rows other workers must see). What keeps a session
setting from outliving its door, on a connection the next caller reuses (an MCP worker thread, a Channels consumer's
ORM thread, a Celery child, a persistent request connection):

1. every door enters its context on entry and restores the one it found in a `finally`; a serving thread's
   outermost context is nobody, so a connection between two callers carries nothing (tests/palace/test_rls_doors.py
   and tests/api/mcp/test_rls_context.py drive each door for two callers on one connection);
2. the database is told on every change, unless the connection is known to hold that value already, and "known"
   means written outside a transaction: a value written inside one is undone by its rollback (to the value at its
   start), so it is remembered as unknown and written again at the next change;
3. a new connection is always told: its session may arrive carrying settings (`PGOPTIONS`, `ALTER ROLE ... SET`,
   the `options` of DATABASE_URL, a pooler's reused server session);
4. a door's `scope()` starts by telling every connection whose value is unknown, so a door that enters nothing (an
   anonymous request) still runs as nobody.

A value set inside a transaction that then rolls back reverts to the value at the transaction's start, which is the
context that was current when it began, since contexts nest inside transactions (or around them). A pooler that
hands one server session to several clients between transactions (PgBouncer's `pool_mode = transaction`) would
carry one client's context to another's statements: connect directly or in session mode (README, Isolation).
Nothing is sent before a connection exists: a new connection gets the current context when it opens
(`connection_created`), so entering a context costs nothing until the database is used.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import connections
from django.db.backends.signals import connection_created

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

USER_SETTING = "atrium.user_id"
SYSTEM_SETTING = "atrium.system"

_APPLIED = "_atrium_acting_applied"
_SET_SQL = f"SELECT set_config('{USER_SETTING}', %s, false), set_config('{SYSTEM_SETTING}', %s, false)"


@dataclass(frozen=True)
class Acting:
    """Who the database is told is acting: a user id, the system (with a reason), or nobody."""

    user_id: int | None = None
    system: str = ""

    def describe(self) -> str:
        if self.system:
            return f"system ({self.system})"
        return f"user #{self.user_id}" if self.user_id is not None else "nobody"


NOBODY = Acting()
_UNKNOWN = Acting(system="\0unknown")  # after a skipped write: the next apply always sends


_THREAD = threading.local()


def _stack(conn: Any = None) -> list[Acting]:
    """This thread's contexts, innermost last. Kept per thread, not on the connection wrapper: Django hands a thread
    a different wrapper per async context (asgiref's Local), e.g. once an event loop runs in it (Playwright's sync
    API, an ASGI server's sync-to-async thread), and a wrapper opened there must still get the thread's context."""
    stack = getattr(_THREAD, "stack", None)
    if stack is None:
        stack = []
        _THREAD.stack = stack
    return stack


def _wanted(conn: Any = None) -> Acting:
    stack = _stack()
    return stack[-1] if stack else NOBODY


def _send(conn: Any, acting: Acting) -> None:
    """Write `acting` to the connection's session, if it is open and not already there."""
    raw = conn.connection
    if raw is None or getattr(conn, _APPLIED, NOBODY) == acting:
        return
    import psycopg

    if raw.closed or raw.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
        # An aborted transaction takes no statement; its rollback restores the value it started with.
        setattr(conn, _APPLIED, _UNKNOWN)
        return
    user = "" if acting.user_id is None else str(acting.user_id)
    # The raw driver cursor: this is bookkeeping of the connection itself (it must also work where pytest-django
    # blocks ORM queries, and must not count in a test's query count).
    with raw.cursor() as cursor:
        cursor.execute(_SET_SQL, [user, acting.system])
    # Inside a transaction the value lasts only if it commits (a rollback restores the one it started with).
    durable = raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    setattr(conn, _APPLIED, acting if durable else _UNKNOWN)


def _apply() -> None:
    """Tell each of this thread's open connections the current context (those known to hold it already are skipped)."""
    wanted = _wanted()
    for alias in connections:
        conn = connections[alias]
        try:
            _send(conn, wanted)
        except Exception:
            # The connection died under us (a restarted server, a terminated backend): close it, so no later call
            # runs with a stale context; the next query opens a new one, told the context when it opens.
            setattr(conn, _APPLIED, _UNKNOWN)
            with contextlib.suppress(Exception):
                conn.close()


def _push(acting: Acting) -> int:
    stack = _stack()
    depth = len(stack)
    stack.append(acting)
    _apply()
    return depth


def _pop_to(depth: int) -> None:
    del _stack()[depth:]
    _apply()


@contextlib.contextmanager
def _acting(acting: Acting) -> Iterator[None]:
    depth = _push(acting)
    try:
        yield
    finally:
        _pop_to(depth)


def acting_as(user: AbstractBaseUser) -> contextlib.AbstractContextManager[None]:
    """Act as `user` (an authenticated person) for the block: only their palaces' rows are visible."""
    if user is None or user.pk is None:
        raise ValueError("acting_as needs a saved user")
    return _acting(Acting(user_id=int(user.pk)))


def acting_as_system(reason: str) -> contextlib.AbstractContextManager[None]:
    """Act as the server itself for the block (jobs, commands, the admin): every row is visible. Say why."""
    if not reason.strip():
        raise ValueError("acting_as_system needs a reason")
    return _acting(Acting(system=reason.strip()[:200]))


def acting_as_nobody() -> contextlib.AbstractContextManager[None]:
    """No acting context for the block (as `atrium shell` runs): every covered table looks empty."""
    return _acting(NOBODY)


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """A frame for `enter_*` calls made somewhere inside (e.g. an auth callback): on exit, whatever was entered
    inside is undone, and the context found on entry is back."""
    depth = len(_stack())
    _apply()  # a door starts from the context it found, whatever a connection was left holding (point 4 above)
    try:
        yield
    finally:
        _pop_to(depth)


def enter_as(user: AbstractBaseUser) -> None:
    """Act as `user` until the enclosing `scope()` ends (for code that resolves the caller without a `with`)."""
    _push(Acting(user_id=int(user.pk)))


def enter_as_system(reason: str) -> None:
    """Act as the system until the enclosing `scope()` ends (Celery's prerun signal; see `leave_to`)."""
    _push(Acting(system=reason.strip()[:200] or "system"))


def depth() -> int:
    return len(_stack())


def leave_to(level: int) -> None:
    """Undo every context entered since `depth()` returned `level`."""
    _pop_to(level)


def current() -> Acting:
    """The context the next query of this thread's default connection runs under."""
    return _wanted()


def reset() -> None:
    """Forget every context of this thread's connections and tell the database (a thread reused by another
    caller starts from nothing)."""
    _stack().clear()
    _apply()


def _on_connection_created(sender: Any, connection: Any, **kwargs: Any) -> None:
    # A new session is not assumed empty (point 3 above): it is told the current context, even nobody.
    setattr(connection, _APPLIED, _UNKNOWN)
    _send(connection, _wanted(connection))


connection_created.connect(_on_connection_created, dispatch_uid="atrium.rls")
