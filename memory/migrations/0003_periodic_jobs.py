"""Install the beat schedule in django-celery-beat's tables, so admins can edit it in /admin/:

- decay, daily at 03:15;
- embedding backfill, every 5 minutes;
- distillation, daily at 03:45, in the mode ATRIUM_DISTILL_MODE names (suggest unless set to apply).

Existing rows with these names are left alone (an admin may have changed them). Reversing removes them.
"""

from __future__ import annotations

import json

from django.db import migrations

DECAY = "atrium: decay"
BACKFILL = "atrium: embedding backfill"
DISTILL = "atrium: distillation"


def install(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    CrontabSchedule = apps.get_model("django_celery_beat", "CrontabSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")

    every_5_min, _ = IntervalSchedule.objects.get_or_create(every=5, period="minutes")
    at_0315, _ = CrontabSchedule.objects.get_or_create(
        minute="15", hour="3", day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
    )
    at_0345, _ = CrontabSchedule.objects.get_or_create(
        minute="45", hour="3", day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
    )
    PeriodicTask.objects.get_or_create(
        name=DECAY,
        defaults={
            "task": "memory.decay",
            "crontab": at_0315,
            "kwargs": json.dumps({}),
            "description": "Archive long-unused, low-importance memories (restorable); never those under review.",
        },
    )
    PeriodicTask.objects.get_or_create(
        name=BACKFILL,
        defaults={
            "task": "memory.embeddings_backfill",
            "interval": every_5_min,
            "kwargs": json.dumps({}),
            "description": "Embed memories saved while the embedder was down.",
        },
    )
    PeriodicTask.objects.get_or_create(
        name=DISTILL,
        defaults={
            "task": "memory.distill",
            "crontab": at_0345,
            "kwargs": json.dumps({"mode": "setting"}),
            "description": "Merge same-topic clusters into rules; mode per ATRIUM_DISTILL_MODE (suggest|apply), "
            'or set kwargs {"mode": "apply"} here.',
        },
    )


def remove(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(name__in=[DECAY, BACKFILL, DISTILL]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0002_search_vector_trigger"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(install, remove)]
