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
wrappers, one per async context): a thread that keeps its connection between calls (api/mcp/workers.py) starts every
call from what the previous one restored, and `reset()` clears it outright. The settings are session settings
written with `set_config(..., false)`: Django runs in autocommit, so a transaction-local `SET LOCAL` would vanish
after the first statement. A value set inside a transaction that then rolls back reverts to the value at the
transaction's start, which is the context that was current when it began, since contexts nest inside transactions
(or around them). Nothing is sent before a connection exists: a new connection gets the current context when it
opens (`connection_created`), so pushing a context costs nothing until the database is used.
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
    setattr(conn, _APPLIED, acting)


def _push(acting: Acting) -> int:
    stack = _stack()
    depth = len(stack)
    stack.append(acting)
    for alias in connections:
        conn = connections[alias]
        try:
            _send(conn, acting)
        except Exception:
            # The connection died under us (a restarted server, a terminated backend): close it, so the next query
            # opens a new one, which gets this context when it opens (`connection_created`).
            setattr(conn, _APPLIED, _UNKNOWN)
            with contextlib.suppress(Exception):
                conn.close()
    return depth


def _pop_to(depth: int) -> None:
    del _stack()[depth:]
    for alias in connections:
        conn = connections[alias]
        try:
            _send(conn, _wanted(conn))
        except Exception:
            # Could not restore (the connection broke): close it, so no later call runs with this context.
            setattr(conn, _APPLIED, _UNKNOWN)
            with contextlib.suppress(Exception):
                conn.close()


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
    for alias in connections:
        conn = connections[alias]
        try:
            _send(conn, NOBODY)
        except Exception:
            setattr(conn, _APPLIED, _UNKNOWN)
            with contextlib.suppress(Exception):
                conn.close()


def _on_connection_created(sender: Any, connection: Any, **kwargs: Any) -> None:
    # A new session has no settings: note that, then give it the context current for its wrapper.
    setattr(connection, _APPLIED, NOBODY)
    _send(connection, _wanted(connection))


connection_created.connect(_on_connection_created, dispatch_uid="atrium.rls")
