"""channels' WebsocketCommunicator without `channels.testing.__init__`, which imports daphne for its live-server
class (Atrium serves with uvicorn; daphne is not installed). The communicator itself needs only asgiref."""

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

__all__ = ["WebsocketCommunicator"]
