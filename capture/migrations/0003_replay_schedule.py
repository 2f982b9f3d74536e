"""Install the capture replay in django-celery-beat's tables (editable in /admin/): every 5 minutes, the turns a
failed attempt left pending are extracted again. An existing row with this name is left alone; reversing removes it.
"""

from __future__ import annotations

import json

from django.db import migrations

REPLAY = "atrium: capture replay"


def install(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    every_5_min, _ = IntervalSchedule.objects.get_or_create(every=5, period="minutes")
    PeriodicTask.objects.get_or_create(
        name=REPLAY,
        defaults={
            "task": "capture.replay",
            "interval": every_5_min,
            "kwargs": json.dumps({}),
            "description": "Extract the captured turns a failed attempt left pending (capture/processing.py).",
        },
    )


def remove(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=REPLAY).delete()


class Migration(migrations.Migration):
    dependencies = [("capture", "0002_row_level_security"), ("django_celery_beat", "0019_alter_periodictasks_options")]
    operations = [migrations.RunPython(install, remove)]
