"""The live panel's websocket in tests: channels' WebsocketCommunicator without `channels.testing.__init__`, which
imports daphne for its live-server class (Atrium serves with uvicorn; daphne is not installed; the communicator itself
needs only asgiref), a communicator on /ws/panel/ for a logged-in test client, and an op row written as a save does."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import channels

if "channels.testing" not in sys.modules:
    package = types.ModuleType("channels.testing")
    package.__path__ = [str(Path(channels.__file__).parent / "testing")]
    sys.modules["channels.testing"] = package

from channels.testing.websocket import WebsocketCommunicator  # noqa: E402
from django.db import transaction  # noqa: E402

from palace.oplog import oplog_write  # noqa: E402

__all__ = ["LIVE_TIMEOUT", "WebsocketCommunicator", "communicator", "save_op"]

# The goal is well under a second; the margin keeps a loaded CI box from failing a correct build.
LIVE_TIMEOUT = 3


def communicator(client, language="en", live="today,log,judge"):
    """A socket as a page opens it; `live` names the page's targets (panel/consumers.py), all of them by default."""
    from config.asgi import websocket_app

    sid = client.cookies["sessionid"].value
    headers = [
        (b"cookie", f"sessionid={sid}".encode()),
        (b"origin", b"http://testserver"),
        (b"host", b"testserver"),
        (b"accept-language", language.encode()),
    ]
    return WebsocketCommunicator(websocket_app, f"/ws/panel/?live={live}", headers=headers)


def save_op(palace, actor, op="memory.save"):
    with transaction.atomic():
        return oplog_write(op=op, actor=actor, palace=palace, target_kind="memory", target_id=7, detail={"n": 1})
