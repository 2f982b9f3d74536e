"""The scheduled jobs' admin actions need the change permission (django-celery-beat's own need none)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import Permission
from django.test import Client
from django_celery_beat.models import PeriodicTask

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
    from django_celery_beat.models import IntervalSchedule

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
