"""The scheduled jobs' admin actions need the change permission (django-celery-beat's own need none), a reason, and
write one `admin.action` op row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from palace.models import OpLog

URL = "/admin/django_celery_beat/periodictask/"


def staff(make_user: Callable[..., Any], name: str, *codenames: str) -> Client:
    user = make_user(name)
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def test_view_only_staff_cannot_disable_a_job_but_a_holder_of_change_can(make_user: Callable[..., Any]) -> None:
    every = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.DAYS)
    task = PeriodicTask.objects.create(name="probe", task="memory.tasks.decay", interval=every, enabled=True)
    viewer = staff(make_user, "auditor", "view_periodictask")
    page = viewer.get(URL)
    assert page.status_code == 200 and "probe" in page.content.decode()
    for action in ("disable_tasks", "toggle_tasks", "run_tasks"):
        assert f'value="{action}"' not in page.content.decode()
        viewer.post(URL, {"reason": "audit test", "action": action, "_selected_action": [task.pk]})
        task.refresh_from_db()
        assert task.enabled is True

    editor = staff(make_user, "operator", "view_periodictask", "change_periodictask")
    assert 'value="disable_tasks"' in editor.get(URL).content.decode()
    editor.post(URL, {"reason": "audit test", "action": "disable_tasks", "_selected_action": [task.pk]})
    task.refresh_from_db()
    assert task.enabled is False


@pytest.mark.parametrize(
    ("action", "before", "after"),
    [("enable_tasks", False, True), ("disable_tasks", True, False), ("toggle_tasks", True, False)],
)
def test_a_job_action_needs_a_reason_and_writes_one_admin_action_row(
    make_user: Callable[..., Any], action: str, before: bool, after: bool
) -> None:
    """Without a reason the action is refused with the message and changes nothing; with one it changes the jobs and
    writes one `admin.action` row (the operator, the reason, the action, the jobs) in the same transaction."""
    every = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.DAYS)
    tasks = [
        PeriodicTask.objects.create(name=name, task="memory.tasks.decay", interval=every, enabled=before)
        for name in ("probe", "probe-2")
    ]
    untouched = PeriodicTask.objects.create(name="bystander", task="memory.tasks.decay", interval=every, enabled=before)
    operator = staff(make_user, "operator", "view_periodictask", "change_periodictask")
    chosen = {"action": action, "_selected_action": [t.pk for t in tasks]}

    refused = operator.post(URL, chosen, follow=True)
    assert "A reason is required" in refused.content.decode()
    assert [t.enabled for t in PeriodicTask.objects.filter(pk__in=[t.pk for t in tasks])] == [before, before]
    assert not OpLog.objects.filter(op="admin.action").exists()

    operator.post(URL, {**chosen, "reason": "decay paused for the migration"})
    mine = PeriodicTask.objects.filter(pk__in=[*(t.pk for t in tasks), untouched.pk])
    assert {t.pk: t.enabled for t in mine} == {
        tasks[0].pk: after,
        tasks[1].pk: after,
        untouched.pk: before,
    }
    (row,) = OpLog.objects.filter(op="admin.action")
    assert row.reason == "decay paused for the migration" and row.actor_user is not None
    assert (row.actor_user.get_username(), row.actor_name) == ("operator", "admin")
    assert row.detail["action"] == action and sorted(row.detail["ids"]) == sorted(t.pk for t in tasks)
    assert (row.detail["model"], row.detail["count"], row.target_kind) == (
        "django_celery_beat.periodictask",
        2,
        "periodictask",
    )
