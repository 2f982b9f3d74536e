"""Writing the ledger. Every mutation calls `oplog_write` inside the transaction that makes the change."""

from __future__ import annotations

import functools
from contextvars import ContextVar
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
    if not transaction.get_connection().in_atomic_block:
        raise OpLogOutsideTransaction(f"op {op!r} must be written inside transaction.atomic()")
    row = OpLog.objects.create(
        op=op,
        actor_kind=actor.kind,
        actor_user_id=actor.user_id,
        actor_token_id=actor.token_id,
        actor_token_label=actor.token_label,
        actor_name=actor.system or (actor.user.get_username() if actor.user is not None else ""),
        palace=palace,
        target_kind=target_kind,
        target_id=target_id,
        reason=reason,
        detail=detail or {},
        request_id=request_id_var.get(),
    )
    # Live panel updates once the change is visible; robust: a failed publish never fails the write.
    transaction.on_commit(
        functools.partial(
            events.oplog_published,
            oplog_id=row.pk,
            op=op,
            palace_id=row.palace_id,
            target_kind=target_kind,
            target_id=target_id,
        ),
        robust=True,
    )
    return row
