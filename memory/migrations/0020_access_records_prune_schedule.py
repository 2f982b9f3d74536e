"""Install the daily sweep of old access records (memory/jobs/retention.py) in django-celery-beat's tables (editable in
/admin/). An existing row with this name is left alone; reversing removes it."""

from __future__ import annotations

import json

from django.db import migrations

PRUNE = "atrium: access records retention"


def install(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    every_day, _ = IntervalSchedule.objects.get_or_create(every=1, period="days")
    PeriodicTask.objects.get_or_create(
        name=PRUNE,
        defaults={
            "task": "memory.access_records_prune",
            "interval": every_day,
            "kwargs": json.dumps({}),
            "description": "Delete access records older than ATRIUM_ACCESS_RECORDS_KEEP_DAYS "
            "(memory/jobs/retention.py); the op log is never pruned.",
        },
    )


def remove(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=PRUNE).delete()


class Migration(migrations.Migration):
    dependencies = [("memory", "0019_verbose_names"), ("django_celery_beat", "0019_alter_periodictasks_options")]
    operations = [migrations.RunPython(install, remove)]
