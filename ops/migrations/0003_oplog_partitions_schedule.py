"""Install the daily task that keeps the op log's next monthly partitions ready (palace/oplog/partitions.py, palace
0008) in django-celery-beat's tables, at 01:10 UTC (editable in /admin/). An existing row with this name is left
alone; reversing removes it."""

from __future__ import annotations

import json

from django.db import migrations

PARTITIONS = "atrium: op log partitions"


def install(apps, schema_editor):
    CrontabSchedule = apps.get_model("django_celery_beat", "CrontabSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    at_0110, _ = CrontabSchedule.objects.get_or_create(
        minute="10", hour="1", day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
    )
    PeriodicTask.objects.get_or_create(
        name=PARTITIONS,
        defaults={
            "task": "ops.oplog_partitions",
            "crontab": at_0110,
            "kwargs": json.dumps({}),
            "description": "Create the op log's partitions of this month and the next three (palace/oplog/"
            "partitions.py); the op log itself is never pruned.",
        },
    )


def remove(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=PARTITIONS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("ops", "0002_export_link_use"),
        ("palace", "0008_oplog_partitions"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(install, remove)]
