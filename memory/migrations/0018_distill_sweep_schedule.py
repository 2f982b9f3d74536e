"""Install the sweep of distillation jobs a crashed worker left running in django-celery-beat's tables (editable in
/admin/): every 5 minutes, a job running longer than ATRIUM_DISTILL_JOB_TIMEOUT_MINUTES is failed with the reason.
An existing row with this name is left alone; reversing removes it."""

from __future__ import annotations

import json

from django.db import migrations

SWEEP = "atrium: distillation job sweep"


def install(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    every_5_min, _ = IntervalSchedule.objects.get_or_create(every=5, period="minutes")
    PeriodicTask.objects.get_or_create(
        name=SWEEP,
        defaults={
            "task": "memory.distill_jobs_sweep",
            "interval": every_5_min,
            "kwargs": json.dumps({}),
            "description": "Fail the distillation jobs a crashed worker left running (memory/jobs/distill_job.py).",
        },
    )


def remove(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=SWEEP).delete()


class Migration(migrations.Migration):
    dependencies = [("memory", "0017_distill_job"), ("django_celery_beat", "0019_alter_periodictasks_options")]
    operations = [migrations.RunPython(install, remove)]
