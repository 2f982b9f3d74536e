"""Backups (ops/backup.py):

1. The row-level security helpers read `palace_membership` by its qualified name. pg_dump and pg_restore run with
   an empty search_path, and a policy that calls a helper naming the table unqualified fails there ("relation
   palace_membership does not exist"), so no dump of a table under the policies could be made. Still plain SQL
   functions (no SET clause), so PostgreSQL keeps inlining them into the policies.
2. The scheduled backup in django-celery-beat's tables, daily at 02:30 UTC: it does nothing until ATRIUM_BACKUP_DIR
   is set (off by default), then keeps the newest ATRIUM_BACKUP_KEEP backups there. Editable in /admin/.
"""

from __future__ import annotations

import json

from django.db import migrations

BACKUP = "atrium: backup"

QUALIFIED = """
CREATE OR REPLACE FUNCTION atrium_readable_palaces() RETURNS bigint[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(palace_id), '{}') FROM public.palace_membership
   WHERE user_id = public.atrium_acting_user() $$;

CREATE OR REPLACE FUNCTION atrium_writable_palaces() RETURNS bigint[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(palace_id), '{}') FROM public.palace_membership
   WHERE user_id = public.atrium_acting_user() AND role IN ('owner', 'editor') $$;
"""

UNQUALIFIED = """
CREATE OR REPLACE FUNCTION atrium_readable_palaces() RETURNS bigint[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(palace_id), '{}') FROM palace_membership WHERE user_id = atrium_acting_user() $$;

CREATE OR REPLACE FUNCTION atrium_writable_palaces() RETURNS bigint[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(palace_id), '{}') FROM palace_membership
   WHERE user_id = atrium_acting_user() AND role IN ('owner', 'editor') $$;
"""


def install(apps, schema_editor):
    CrontabSchedule = apps.get_model("django_celery_beat", "CrontabSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    at_0230, _ = CrontabSchedule.objects.get_or_create(
        minute="30", hour="2", day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
    )
    PeriodicTask.objects.get_or_create(
        name=BACKUP,
        defaults={
            "task": "ops.backup",
            "crontab": at_0230,
            "kwargs": json.dumps({}),
            "description": "Back up the whole database to ATRIUM_BACKUP_DIR, keeping the newest ATRIUM_BACKUP_KEEP; "
            "does nothing while ATRIUM_BACKUP_DIR is unset.",
        },
    )


def remove(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=BACKUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("palace", "0004_row_level_security"),
        ("memory", "0014_knowledge"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunSQL(QUALIFIED, UNQUALIFIED), migrations.RunPython(install, remove)]
