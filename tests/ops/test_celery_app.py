"""A web process (or an `atrium` command) sends tasks through the configured broker, whatever it imported first."""

from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings

PROBE = """
import django
django.setup()  # what the ASGI application and every command do; nothing here imports config.celery
from capture.tasks import capture_process
from memory.tasks import distill_job_task as distill_job
print(capture_process.app.conf.broker_url)
print(distill_job.app.conf.broker_url)
"""


def test_a_process_that_only_set_up_django_sends_tasks_to_the_configured_broker() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    broker = settings.CELERY_BROKER_URL
    assert broker.startswith(("redis", "unix://")), broker  # the suite's own Redis
    # Before config/celery_app.py both were None: Celery's default app, which sends to amqp on localhost.
    assert out.stdout.split() == [broker, broker]
