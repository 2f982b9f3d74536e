"""A deadline on REST requests (issue 24, "Medium 5"): a `/api/v1/` request that runs longer than
ATRIUM_REST_DEADLINE_SECONDS (POST /api/v1/import: ATRIUM_REST_IMPORT_DEADLINE_SECONDS) is stopped, its database
work cancelled, and answered 504 with the REST error body naming the setting.

Neither Django, django-ninja nor uvicorn has a request deadline, and an `asyncio.timeout` around the ASGI handler
would only stop waiting: a sync view runs in a thread that cannot be cancelled, so its queries and writes would go on
after the client was told they had stopped. The work itself is stopped where it runs instead, with two well-kept
mechanisms:

- PostgreSQL's `statement_timeout`: the statement running when the deadline passes is cancelled by the server
  (QueryCanceled), its transaction rolled back. Before each statement the connection's timeout is brought down to
  the time the request has left, when that is shorter than what the connection holds already (ATRIUM_DB_STATEMENT_
  TIMEOUT, the app role's), with a slack of a tenth of the deadline (at most 1 s) so that a request of many quick
  statements pays for one `set_config` per slack, not per statement;
- Django's documented query hook (`connection.execute_wrapper`): a statement that would start after the deadline is
  not sent. Work between statements (an embedding computed in the process) is stopped at its next statement.

Either way the view's call stack unwinds with DeadlineExceeded (an open `transaction.atomic` rolls back), and the
middleware answers 504. When the request ends, a connection whose timeout was changed gets its own back (`RESET`),
or is closed if that fails, so a kept connection carries nothing to the next request.

A streamed export's body is read after the view returned (ops/portability/streaming.py): the deadline covers
building the response (checking the palaces); each page the body reads is one statement under the role's
`statement_timeout`, and the rest goes at the client's pace. Uploads: POST /api/v1/import loads a whole document
through the write pipeline, so it has its own, longer deadline.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.db import OperationalError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse

logger = logging.getLogger(__name__)

REST_PREFIX = "/api/v1/"
IMPORT_PATHS = {"/api/v1/import", "/api/v1/import/", "/api/v1/backfill/runs"}  # a backfill stores its turns first
# Savepoint statements of transaction.atomic (Django's PostgreSQL operations): never held back by the deadline.
UNWINDING = ("SAVEPOINT ", "ROLLBACK TO SAVEPOINT ", "RELEASE SAVEPOINT ")


class DeadlineExceeded(Exception):
    def __init__(self, *, seconds: float, setting: str) -> None:
        self.seconds = seconds
        self.setting = setting
        super().__init__(f"the request took longer than {seconds:g} s ({setting})")


class DeadlineGuard:
    """An execute wrapper (Django's database instrumentation) that keeps every statement inside the deadline."""

    def __init__(self, *, seconds: float, setting: str) -> None:
        self.seconds = seconds
        self.setting = setting
        self.deadline = time.monotonic() + seconds
        self.slack = min(1.0, seconds / 10)
        role = float(settings.ATRIUM_DB_STATEMENT_TIMEOUT)
        self.role_bound = role if role > 0 else math.inf
        self.bounds: dict[str, float] = {}  # per alias: the statement_timeout this guard set, seconds
        self.changed: dict[str, Any] = {}  # per alias: the connection wrapper whose timeout it changed

    def exceeded(self) -> DeadlineExceeded:
        return DeadlineExceeded(seconds=self.seconds, setting=self.setting)

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        if isinstance(sql, str) and sql.startswith(UNWINDING):
            return execute(sql, params, many, context)  # an atomic block unwinding must be able to roll back
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise self.exceeded()
        self._tighten(context["connection"], remaining)
        try:
            return execute(sql, params, many, context)
        except OperationalError as exc:
            import psycopg

            if not isinstance(exc.__cause__, psycopg.errors.QueryCanceled):
                raise
            if self.bounds.get(context["connection"].alias) is None:  # the role's own timeout, not the deadline
                raise DeadlineExceeded(seconds=self.role_bound, setting="ATRIUM_DB_STATEMENT_TIMEOUT") from exc
            raise self.exceeded() from exc

    def _tighten(self, conn: Any, remaining: float) -> None:
        held = self.bounds.get(conn.alias, self.role_bound)
        if held <= remaining + self.slack:
            return
        raw = conn.connection
        import psycopg

        if raw is None or raw.closed or raw.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
            return  # an aborted transaction takes no statement; the one about to run fails on its own
        # The raw driver cursor: bookkeeping of the connection, not one of the request's queries (query counts).
        with raw.cursor() as cursor:
            cursor.execute("SELECT set_config('statement_timeout', %s, false)", [f"{math.ceil(remaining * 1000)}ms"])
        self.bounds[conn.alias] = remaining
        self.changed[conn.alias] = conn

    def release(self) -> None:
        """Give each changed connection its own statement_timeout back (close it when that fails)."""
        for conn in self.changed.values():
            raw = conn.connection
            if raw is None or raw.closed:
                continue
            try:
                with raw.cursor() as cursor:
                    cursor.execute("RESET statement_timeout")
            except Exception:
                logger.warning("could not reset statement_timeout after a REST deadline; closing the connection")
                with contextlib.suppress(Exception):
                    conn.close()
        self.changed.clear()
        self.bounds.clear()


@contextlib.contextmanager
def deadline_scope(*, seconds: float, setting: str) -> Iterator[DeadlineGuard]:
    """Every statement of this thread's connections inside the block ends within `seconds` (DeadlineExceeded)."""
    guard = DeadlineGuard(seconds=seconds, setting=setting)
    try:
        with contextlib.ExitStack() as stack:
            for alias in connections:
                stack.enter_context(connections[alias].execute_wrapper(guard))
            yield guard
    finally:
        guard.release()


def deadline_for(request: HttpRequest) -> tuple[float, str] | None:
    """The deadline of a request, with the setting that gives it; None off the REST API or when it is 0 (none)."""
    if not request.path_info.startswith(REST_PREFIX):
        return None
    if request.method == "POST" and request.path_info in IMPORT_PATHS:
        seconds, setting = settings.ATRIUM_REST_IMPORT_DEADLINE_SECONDS, "ATRIUM_REST_IMPORT_DEADLINE_SECONDS"
    else:
        seconds, setting = settings.ATRIUM_REST_DEADLINE_SECONDS, "ATRIUM_REST_DEADLINE_SECONDS"
    return (float(seconds), setting) if seconds > 0 else None


def deadline_response(exc: DeadlineExceeded) -> HttpResponse:
    message = (
        f"{exc}: it was stopped and its database work cancelled (an unfinished change was rolled back). Narrow the "
        f"request (a smaller page, one project) or ask the operator to raise {exc.setting}"
    )
    response = JsonResponse({"error": {"code": "deadline_exceeded", "message": message}}, status=504)
    response["Cache-Control"] = "no-store"
    return response


class RestDeadlineMiddleware:
    """Runs each REST request inside its deadline (module docstring); answers 504 when the view ran out of it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        rule = deadline_for(request)
        if rule is None:
            return self.get_response(request)
        seconds, setting = rule
        with deadline_scope(seconds=seconds, setting=setting):
            return self.get_response(request)  # the view's DeadlineExceeded comes back as process_exception's 504

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, DeadlineExceeded):
            return self.answer(request, exception)
        return None

    def answer(self, request: HttpRequest, exc: DeadlineExceeded) -> HttpResponse:
        logger.warning("deadline exceeded on %s %s: %s", request.method, request.path, exc)
        return deadline_response(exc)
