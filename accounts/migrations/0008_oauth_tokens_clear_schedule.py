"""Install the daily clean-up of expired OAuth codes and tokens (the toolkit's `cleartokens`, and unused
registrations) in django-celery-beat's tables (editable in /admin/). An existing row with this name is left alone;
reversing removes it."""

from __future__ import annotations

import json

from django.db import migrations

CLEAR = "atrium: OAuth expired tokens clean-up"


def install(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    every_day, _ = IntervalSchedule.objects.get_or_create(every=1, period="days")
    PeriodicTask.objects.get_or_create(
        name=CLEAR,
        defaults={
            "task": "accounts.oauth_tokens_clear",
            "interval": every_day,
            "kwargs": json.dumps({}),
            "description": "Delete expired OAuth codes and tokens and unused client registrations "
            "(accounts/oauth.py, oauth_tokens_clear).",
        },
    )


def remove(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=CLEAR).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0007_token_oauth_application"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(install, remove)]
