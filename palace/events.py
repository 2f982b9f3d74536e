"""Live events: after a mutation commits, tell the panel's websocket consumers of that palace's members.

`publish` never blocks and never raises: it hands the event to one background thread per process, which owns an
event loop and the channel layer's Redis connection. A full queue or an unreachable Redis drops the event with a
log line — a missed live update is repaired by the next page load; a failed write is not.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import threading
from typing import Any

logger = logging.getLogger(__name__)

QUEUE_MAX = 10_000
SEND_TIMEOUT_SECONDS = 2.0
EVENT_TYPE = "atrium.event"  # dispatched to the consumer's `atrium_event` handler


def palace_group(palace_id: int) -> str:
    return f"atrium.palace.{palace_id}"


def user_group(user_id: int) -> str:
    return f"atrium.user.{user_id}"


class _Publisher:
    """A daemon thread with its own event loop, started lazily per process (so forked workers get their own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = 0
        self._queue: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue(QUEUE_MAX)
        self.dropped = 0

    def put(self, group: str, message: dict[str, Any]) -> None:
        self._ensure_thread()
        try:
            self._queue.put_nowait((group, message))
        except queue.Full:
            self.dropped += 1
            if self.dropped % 1000 == 1:
                logger.warning("live events: queue full, %d events dropped so far", self.dropped)

    def _ensure_thread(self) -> None:
        if self._pid == os.getpid():
            return
        with self._lock:
            if self._pid == os.getpid():
                return
            self._queue = queue.Queue(QUEUE_MAX)
            threading.Thread(target=self._run, name="atrium-live-events", daemon=True).start()
            self._pid = os.getpid()

    def _run(self) -> None:
        from channels.layers import get_channel_layer

        events = self._queue
        loop = asyncio.new_event_loop()  # kept for the thread's life: the layer's Redis pool lives on it
        while True:
            group, message = events.get()
            try:
                layer = get_channel_layer()
                if layer is not None:
                    loop.run_until_complete(asyncio.wait_for(layer.group_send(group, message), SEND_TIMEOUT_SECONDS))
            except Exception as exc:  # never let one bad send stop the thread
                logger.warning("live events: could not publish to %s: %s", group, exc)


_publisher = _Publisher()


def publish(*, kind: str, payload: dict[str, Any], palace_id: int | None = None, user_id: int | None = None) -> None:
    """Send `kind` + `payload` to the members of `palace_id` and/or to one user. Never raises."""
    try:
        message = {"type": EVENT_TYPE, "kind": kind, "payload": payload}
        if palace_id is not None:
            _publisher.put(palace_group(palace_id), message)
        if user_id is not None:
            _publisher.put(user_group(user_id), message)
    except Exception as exc:
        logger.warning("live events: publish failed: %s", exc)


def oplog_published(*, oplog_id: int, op: str, palace_id: int | None, target_kind: str, target_id: int | None) -> None:
    """Called by oplog_write through transaction.on_commit: one op row became visible."""
    payload = {"id": oplog_id, "op": op, "palace_id": palace_id, "target_kind": target_kind, "target_id": target_id}
    if palace_id is not None:
        publish(kind="oplog", payload=payload, palace_id=palace_id)
    if target_kind == "user" and target_id is not None and op.startswith("member."):
        publish(kind="membership", payload=payload, user_id=target_id)
