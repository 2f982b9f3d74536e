"""Writing the ledger. Every mutation calls `oplog_write` inside the transaction that makes the change."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from palace import events
from palace.actors import Actor
from palace.models import OpLog, Palace

request_id_var: ContextVar[str] = ContextVar("atrium_request_id", default="")


class OpLogOutsideTransaction(RuntimeError):
    """An op row must commit (or roll back) with the change it records."""


def oplog_write(
    *,
    op: str,
    actor: Actor,
    palace: Palace | None = None,
    target_kind: str = "",
    target_id: int | None = None,
    reason: str = "",
    detail: dict[str, Any] | None = None,
) -> OpLog:
    _check_transaction(op)
    row = OpLog.objects.create(
        **_row(op=op, actor=actor, entry=OpEntry(palace, target_kind, target_id, reason, detail)),
    )
    _publish(row)
    return row


@dataclass
class OpEntry:
    """One row of `oplog_write_many`: what differs between its rows."""

    palace: Palace | None = None
    target_kind: str = ""
    target_id: int | None = None
    reason: str = ""
    detail: dict[str, Any] | None = None


def oplog_write_many(*, op: str, actor: Actor, entries: Sequence[OpEntry]) -> list[OpLog]:
    """Many op rows of one op and actor (a backfill batch's turns) in one insert, in the order given, each
    published as `oplog_write` publishes its row."""
    _check_transaction(op)
    rows = OpLog.objects.bulk_create([OpLog(**_row(op=op, actor=actor, entry=e)) for e in entries])
    for row in rows:
        _publish(row)
    return rows


def _check_transaction(op: str) -> None:
    if not transaction.get_connection().in_atomic_block:
        raise OpLogOutsideTransaction(f"op {op!r} must be written inside transaction.atomic()")


def _row(*, op: str, actor: Actor, entry: OpEntry) -> dict[str, Any]:
    return {
        "op": op,
        "actor_kind": actor.kind,
        "actor_user_id": actor.user_id,
        "actor_token_id": actor.token_id,
        "actor_token_label": actor.token_label,
        "actor_name": actor.system or (actor.user.get_username() if actor.user is not None else ""),
        "palace": entry.palace,
        "target_kind": entry.target_kind,
        "target_id": entry.target_id,
        "reason": entry.reason,
        "detail": entry.detail or {},
        "request_id": request_id_var.get(),
    }


def _publish(row: OpLog) -> None:
    # Live panel updates once the change is visible; robust: a failed publish never fails the write.
    transaction.on_commit(
        functools.partial(
            events.oplog_published,
            oplog_id=row.pk,
            op=row.op,
            palace_id=row.palace_id,
            target_kind=row.target_kind,
            target_id=row.target_id,
        ),
        robust=True,
    )
