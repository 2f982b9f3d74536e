"""Row-level security: the functions every policy uses, and the policies of the palace app's own tables.

The acting context is two session settings (palace/rls.py). The membership lookup is a STABLE SQL function wrapped
in a scalar subquery in every policy, so PostgreSQL evaluates it once per statement (an InitPlan), not per row.
FORCE makes the policies bind the tables' owner too (the role the app connects as). The memory and review apps add
the policies of their tables in their own migrations. Membership and Palace are the access tables themselves and
carry no policy (palace.selectors reads them to answer "not found").
"""

from __future__ import annotations

from django.db import migrations

FUNCTIONS = """
CREATE OR REPLACE FUNCTION atrium_acting_system() RETURNS boolean LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(current_setting('atrium.system', true), '') <> '' $$;

CREATE OR REPLACE FUNCTION atrium_acting_user() RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT nullif(current_setting('atrium.user_id', true), '')::bigint $$;

CREATE OR REPLACE FUNCTION atrium_readable_palaces() RETURNS bigint[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(palace_id), '{}') FROM palace_membership WHERE user_id = atrium_acting_user() $$;

CREATE OR REPLACE FUNCTION atrium_writable_palaces() RETURNS bigint[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(palace_id), '{}') FROM palace_membership
   WHERE user_id = atrium_acting_user() AND role IN ('owner', 'editor') $$;
"""

DROP_FUNCTIONS = """
DROP FUNCTION IF EXISTS atrium_writable_palaces();
DROP FUNCTION IF EXISTS atrium_readable_palaces();
DROP FUNCTION IF EXISTS atrium_acting_user();
DROP FUNCTION IF EXISTS atrium_acting_system();
"""

SYSTEM = "(SELECT atrium_acting_system())"
READABLE = f"({SYSTEM} OR palace_id = ANY ((SELECT atrium_readable_palaces())::bigint[]))"
WRITABLE = f"({SYSTEM} OR palace_id = ANY ((SELECT atrium_writable_palaces())::bigint[]))"


def palace_policies(table: str, *, read: str = READABLE, write: str = WRITABLE, insert: str | None = None) -> str:
    """ENABLE + FORCE and four policies: read for SELECT, `insert` (default: write) for INSERT, write for UPDATE
    (old and new row) and DELETE."""
    return f"""
ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
CREATE POLICY {table}_read ON {table} FOR SELECT USING {read};
CREATE POLICY {table}_insert ON {table} FOR INSERT WITH CHECK {insert or write};
CREATE POLICY {table}_update ON {table} FOR UPDATE USING {write} WITH CHECK {write};
CREATE POLICY {table}_delete ON {table} FOR DELETE USING {write};
"""


def drop_policies(table: str) -> str:
    return "".join(
        f"DROP POLICY IF EXISTS {table}_{name} ON {table};\n" for name in ("read", "insert", "update", "delete")
    ) + f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY;\nALTER TABLE {table} DISABLE ROW LEVEL SECURITY;\n"


# Op rows: any member records what they did in a palace they can read (a viewer's assessment is one); rows without
# a palace (token changes) belong to the person who acted. Append-only: the trigger of palace 0002 refuses UPDATE
# and DELETE with an error; the update and delete policies let a visible row reach it (without them the statement
# would silently match nothing, which hides an attempt to rewrite history instead of refusing it).
OPLOG_VISIBLE = (
    f"({SYSTEM} OR palace_id = ANY ((SELECT atrium_readable_palaces())::bigint[])"
    " OR (palace_id IS NULL AND actor_user_id = (SELECT atrium_acting_user())))"
)
OPLOG = f"""
ALTER TABLE palace_oplog ENABLE ROW LEVEL SECURITY;
ALTER TABLE palace_oplog FORCE ROW LEVEL SECURITY;
CREATE POLICY palace_oplog_read ON palace_oplog FOR SELECT USING {OPLOG_VISIBLE};
CREATE POLICY palace_oplog_insert ON palace_oplog FOR INSERT WITH CHECK {OPLOG_VISIBLE};
CREATE POLICY palace_oplog_update ON palace_oplog FOR UPDATE USING {OPLOG_VISIBLE};
CREATE POLICY palace_oplog_delete ON palace_oplog FOR DELETE USING {OPLOG_VISIBLE};
"""

TABLES = ("palace_room", "palace_slot", "palace_tourstop")
FORWARD = FUNCTIONS + "".join(palace_policies(table) for table in TABLES) + OPLOG
BACKWARD = "".join(drop_policies(table) for table in (*TABLES, "palace_oplog")) + DROP_FUNCTIONS


class Migration(migrations.Migration):
    dependencies = [("palace", "0003_room_slot_tourstop_room_room_unique_name_and_more")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
