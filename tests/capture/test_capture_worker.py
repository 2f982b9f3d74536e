"""Capture end to end with a real Celery worker: the endpoint answers 202 at once after storing the turns, the worker
(a separate process, prefork) extracts and saves them, and a resend of the whole transcript with a new turn at the
end stores and saves only the new one."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from capture.models import CaptureTurn
from memory.models import Memory
from palace.models import OpLog, Palace

BOUND_S = 90  # the deadline for the worker's extraction, once it answers a ping (it loads the embedder first)


def _wait_for(predicate: Callable[[], bool], *, log: Path) -> None:
    until = time.monotonic() + BOUND_S
    while time.monotonic() < until:
        if predicate():
            return
        time.sleep(0.3)
    pytest.fail(f"timed out waiting for the worker:\n{log.read_text()[-3000:]}")


def _states(key: str) -> list[tuple[int, str]]:
    return list(CaptureTurn.objects.filter(session__key=key).order_by("index").values_list("index", "state"))


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_extracts_the_turns_once_and_a_resend_adds_only_the_new_turn(
    alice: Any,
    capture_as: Callable[..., Any],
    turns: Callable[..., list[dict[str, Any]]],
    worker: tuple[subprocess.Popen[bytes], str, Path],
) -> None:
    _, _, log = worker
    palace = Palace.objects.get(personal_owner=alice)
    client = capture_as(alice)
    first = turns(
        "We decided to deploy the billing service on Thursdays only.", "Remember that staging uses port 8081."
    )
    status, answer = client.post({"session": "s-worker", "client": "claude-code", "turns": first})
    assert (status, answer["stored"], answer["queued"]) == (202, 2, True)
    _wait_for(lambda: _states("s-worker") == [(0, "done"), (1, "done")], log=log)
    saved = set(Memory.objects.filter(palace=palace, source_session="s-worker").values_list("pk", flat=True))
    assert saved

    status, answer = client.post({"session": "s-worker", "turns": first})  # the same turns: nothing new
    assert (answer["stored"], answer["duplicates"], answer["queued"]) == (0, 2, False)
    again = [*first, *turns("I prefer squash merges for feature branches.", start=2)]
    status, answer = client.post({"session": "s-worker", "turns": again})
    assert (status, answer["stored"], answer["duplicates"], answer["queued"]) == (202, 1, 2, True)
    _wait_for(lambda: _states("s-worker") == [(0, "done"), (1, "done"), (2, "done")], log=log)
    _wait_for(lambda: OpLog.objects.filter(op="capture.session").count() >= 2, log=log)  # summarised after each

    episodes = Memory.objects.filter(palace=palace, source_session="s-worker", kind="episode")
    assert sorted(episodes.values_list("source_turn", flat=True)) == ["0", "1", "2"]  # each turn saved once
    after = set(Memory.objects.filter(palace=palace, source_session="s-worker").values_list("pk", flat=True))
    assert saved < after
    assert OpLog.objects.filter(op="capture.turn", palace=palace).count() == 3
    assert all(m.embedding is not None for m in episodes)  # the worker's embedder ran
