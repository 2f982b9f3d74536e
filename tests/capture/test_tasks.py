"""Capture's Celery doors: registered with the app, queued only after the capture's commit (and only when turns are
pending), and the replay on the beat schedule."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any
from unittest import mock

from django_celery_beat.models import PeriodicTask

from capture import tasks
from capture.models import CaptureSession


def test_the_capture_tasks_are_registered_with_the_celery_app() -> None:
    from config.celery import app

    app.loader.import_default_modules()
    assert {tasks.PROCESS_TASK, tasks.REPLAY_TASK} <= set(app.tasks)


def test_the_worker_is_queued_after_the_commit_and_only_when_turns_wait(
    alice: Any, capture_as: Callable[..., Any], django_capture_on_commit_callbacks: Any
) -> None:
    client = capture_as(alice)
    body = {"session": "s-queue", "turns": [{"index": 0, "role": "user", "text": "We ship on Thursdays."}]}
    with mock.patch.object(tasks.capture_process, "delay") as delay:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            status, answer = client.post(body)
        assert status == 202 and answer["queued"] is True
        delay.assert_not_called()  # not before the commit
        for callback in callbacks:
            callback()
        delay.assert_called_once_with(CaptureSession.objects.get(key="s-queue").pk)
        delay.reset_mock()
        CaptureSession.objects.get(key="s-queue").turns.update(state="done")
        with django_capture_on_commit_callbacks(execute=True):
            status, answer = client.post(body)  # a resend with nothing pending: nothing to queue
        assert (answer["queued"], answer["duplicates"]) == (False, 1)
        delay.assert_not_called()


def test_the_replay_is_on_the_beat_schedule(db: Any) -> None:
    from django.apps import apps as django_apps

    migration = importlib.import_module("capture.migrations.0003_replay_schedule")
    PeriodicTask.objects.filter(name=migration.REPLAY).delete()
    migration.install(django_apps, None)
    migration.install(django_apps, None)  # it must not duplicate
    (row,) = PeriodicTask.objects.filter(name=migration.REPLAY)
    assert row.task == tasks.REPLAY_TASK and row.enabled
    assert (row.interval.every, row.interval.period) == (5, "minutes")
