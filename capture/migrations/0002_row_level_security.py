"""Row-level security on capture's tables: a session, its turns and a backfill run are their person's alone, even
from the other members of the palace the turns go to (functions from palace 0004; see palace/rls.py). A session is
inserted into, or moved to, only a palace its user may write (editor or owner), as capture's routing decides."""

from __future__ import annotations

from django.db import migrations

SYSTEM = "(SELECT atrium_acting_system())"
OWN = f"({SYSTEM} OR user_id = (SELECT atrium_acting_user()))"
OWN_AND_WRITABLE = (
    f"({SYSTEM} OR (user_id = (SELECT atrium_acting_user())"
    " AND palace_id = ANY ((SELECT atrium_writable_palaces())::bigint[])))"
)
# A turn follows its session, which is visible only to its user (its own policy applies inside this subquery).
VIA_SESSION = (
    f"({SYSTEM} OR EXISTS (SELECT 1 FROM capture_capturesession s WHERE s.id = session_id"
    " AND s.user_id = (SELECT atrium_acting_user())))"
)


def policies(table: str, *, read: str, write: str, check: str | None = None) -> str:
    """`check`: what a new or changed row must satisfy (default: `write`)."""
    return f"""
ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
CREATE POLICY {table}_read ON {table} FOR SELECT USING {read};
CREATE POLICY {table}_insert ON {table} FOR INSERT WITH CHECK {check or write};
CREATE POLICY {table}_update ON {table} FOR UPDATE USING {write} WITH CHECK {check or write};
CREATE POLICY {table}_delete ON {table} FOR DELETE USING {write};
"""


def drop(table: str) -> str:
    return "".join(
        f"DROP POLICY IF EXISTS {table}_{name} ON {table};\n" for name in ("read", "insert", "update", "delete")
    ) + f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY;\nALTER TABLE {table} DISABLE ROW LEVEL SECURITY;\n"


TABLES = ("capture_capturesession", "capture_captureturn", "capture_backfillrun")
FORWARD = (
    policies("capture_capturesession", read=OWN, write=OWN, check=OWN_AND_WRITABLE)
    + policies("capture_captureturn", read=VIA_SESSION, write=VIA_SESSION)
    + policies("capture_backfillrun", read=OWN, write=OWN)
)
BACKWARD = "".join(drop(table) for table in TABLES)


class Migration(migrations.Migration):
    dependencies = [("capture", "0001_initial"), ("palace", "0005_membership_state")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
