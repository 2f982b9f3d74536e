"""A membership's state: an owner's invitation is pending until the invited person accepts it. Existing rows (and
the operator's CLI, personal palaces, a project's creator) are accepted. Row-level security's palace functions of
palace 0004 are replaced to count accepted memberships only, so a pending invitation grants nothing in the database
either."""

from __future__ import annotations

from django.db import migrations, models

# Schema-qualified like ops 0001 made them (pg_dump and pg_restore run with an empty search_path), and after it: ops
# 0001 replaced the functions of palace 0004, so this migration must come later or ops 0001 would undo it.
ACCEPTED_ONLY = """
CREATE OR REPLACE FUNCTION atrium_readable_palaces() RETURNS bigint[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(palace_id), '{}') FROM public.palace_membership
   WHERE user_id = public.atrium_acting_user() AND state = 'accepted' $$;

CREATE OR REPLACE FUNCTION atrium_writable_palaces() RETURNS bigint[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(palace_id), '{}') FROM public.palace_membership
   WHERE user_id = public.atrium_acting_user() AND state = 'accepted' AND role IN ('owner', 'editor') $$;
"""

# The functions as ops 0001 left them (they must not read the column once it is gone).
ANY_STATE = """
CREATE OR REPLACE FUNCTION atrium_readable_palaces() RETURNS bigint[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(palace_id), '{}') FROM public.palace_membership
   WHERE user_id = public.atrium_acting_user() $$;

CREATE OR REPLACE FUNCTION atrium_writable_palaces() RETURNS bigint[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(palace_id), '{}') FROM public.palace_membership
   WHERE user_id = public.atrium_acting_user() AND role IN ('owner', 'editor') $$;
"""


class Migration(migrations.Migration):
    dependencies = [("palace", "0004_row_level_security"), ("ops", "0001_backup")]

    operations = [
        migrations.AddField(
            model_name="membership",
            name="state",
            field=models.CharField(
                choices=[("pending", "Pending"), ("accepted", "Accepted")], default="accepted", max_length=16
            ),
        ),
        migrations.RunSQL(ACCEPTED_ONLY, ANY_STATE),
    ]
