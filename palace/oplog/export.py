"""Exporting an op-log trail as CSV or JSON, streamed in pages so a long trail never sits in memory.

The rows are read in keyset pages (by id, newest first) each inside its own `acting_as_system` block: a streamed
response is iterated after the request's middleware has restored the connection's context (palace/rls.py), so the
stream must say for itself who reads, and must not hold a context across a `yield` (another request's code may run
on the thread between two pages).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import QuerySet

from palace.models import OpLog
from palace.oplog.classes import actor_label, before_after, before_after_text, op_class
from palace.rls import acting_as_system

PAGE = 500
COLUMNS = (
    "id",
    "created_at",
    "op",
    "op_class",
    "actor_kind",
    "actor",
    "actor_user_id",
    "actor_token_id",
    "palace_id",
    "palace",
    "target_kind",
    "target_id",
    "before_after",
    "reason",
    "request_id",
    "detail",
)


def export_rows(
    *,
    queryset: QuerySet[OpLog],
    reader: str,
    mask: Callable[[Any], Any] | None = None,
    reason: Callable[[OpLog], str] | None = None,
) -> Iterator[dict[str, Any]]:
    """Every row of `queryset` (its filters kept, its order replaced by newest first), as plain dicts.

    `mask`, when given, is applied to each row's detail, and before → after is read from the masked detail; `reason`,
    when given, says which reason the export shows. The console passes both for staff who may not read bodies, so the
    file shows what its screen shows (a member's reason can be an epitaph, a detail can quote one)."""
    last: int | None = None
    base = queryset.order_by("-pk").select_related("palace", "actor_user")
    while True:
        with acting_as_system(reader):
            page = list(base.filter(pk__lt=last)[:PAGE] if last is not None else base[:PAGE])
        for row in page:
            yield _row(row, mask, reason)
        if len(page) < PAGE:
            return
        last = page[-1].pk


def _row(
    row: OpLog, mask: Callable[[Any], Any] | None = None, reason: Callable[[OpLog], str] | None = None
) -> dict[str, Any]:
    username = row.actor_user.get_username() if row.actor_user is not None else ""
    detail = mask(row.detail) if mask is not None else row.detail
    changes = before_after(op=row.op, detail=detail, target_id=row.target_id)
    return {
        "id": row.pk,
        "created_at": row.created_at.isoformat(),
        "op": row.op,
        "op_class": op_class(row.op),
        "actor_kind": row.actor_kind,
        "actor": actor_label(
            actor_kind=row.actor_kind,
            actor_name=row.actor_name,
            username=username,
            token_id=row.actor_token_id,
            token_label=row.actor_token_label,
        ),
        "actor_user_id": row.actor_user_id,
        "actor_token_id": row.actor_token_id,
        "palace_id": row.palace_id,
        "palace": (row.palace.origin_key or row.palace.name) if row.palace is not None else "",
        "target_kind": row.target_kind,
        "target_id": row.target_id,
        "changes": [{"field": c.field, "before": c.before, "after": c.after} for c in changes],
        "before_after": before_after_text(changes),
        "reason": reason(row) if reason is not None else row.reason,
        "request_id": row.request_id,
        "detail": detail,
    }


class _Echo:
    """csv.writer writes to this and gets the line back (Django's documented way to stream CSV)."""

    def write(self, value: str) -> str:
        return value


def csv_stream(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(COLUMNS)
    for row in rows:
        out = dict(row, detail=json.dumps(row["detail"], cls=DjangoJSONEncoder, ensure_ascii=False, sort_keys=True))
        yield writer.writerow([_cell(out[c]) for c in COLUMNS])


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    # A cell a spreadsheet would run as a formula is quoted with a leading apostrophe (CSV injection).
    return "'" + text if text[:1] in ("=", "+", "-", "@") and not _number(text) else text


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def json_stream(rows: Iterator[dict[str, Any]], *, header: dict[str, Any]) -> Iterator[str]:
    head = json.dumps(header, cls=DjangoJSONEncoder, ensure_ascii=False)
    yield head[:-1] + ', "rows": [\n'
    first = True
    for row in rows:
        row = {k: v for k, v in row.items() if k != "before_after"}
        yield ("" if first else ",\n") + json.dumps(row, cls=DjangoJSONEncoder, ensure_ascii=False)
        first = False
    yield "\n]}\n"
