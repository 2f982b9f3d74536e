"""A membership's state: an owner's invitation is pending until the invited person accepts it. Existing rows (and
the operator's CLI, personal palaces, a project's creator) are accepted. Row-level security's palace functions of
palace 0004 are replaced to count accepted memberships only, so a pending invitation grants nothing in the database
either."""

from __future__ import annotations

from django.db import migrations, models

ACCEPTED_ONLY = """
CREATE OR REPLACE FUNCTION atrium_readable_palaces() RETURNS bigint[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(palace_id), '{}') FROM palace_membership
   WHERE user_id = atrium_acting_user() AND state = 'accepted' $$;

CREATE OR REPLACE FUNCTION atrium_writable_palaces() RETURNS bigint[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(palace_id), '{}') FROM palace_membership
   WHERE user_id = atrium_acting_user() AND state = 'accepted' AND role IN ('owner', 'editor') $$;
"""

# The functions of palace 0004 again (they must not read the column once it is gone).
ANY_STATE = """
CREATE OR REPLACE FUNCTION atrium_readable_palaces() RETURNS bigint[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(palace_id), '{}') FROM palace_membership WHERE user_id = atrium_acting_user() $$;

CREATE OR REPLACE FUNCTION atrium_writable_palaces() RETURNS bigint[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(palace_id), '{}') FROM palace_membership
   WHERE user_id = atrium_acting_user() AND role IN ('owner', 'editor') $$;
"""


class Migration(migrations.Migration):
    dependencies = [("palace", "0004_row_level_security")]

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
