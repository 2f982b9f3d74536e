"""Row-level security on review cards: readable in the acting user's palaces, written (graded, enrolled) by owners
and editors, as memory_lock requires (functions from palace 0004; see palace/rls.py)."""

from __future__ import annotations

from django.db import migrations

SYSTEM = "(SELECT atrium_acting_system())"
READABLE = f"({SYSTEM} OR palace_id = ANY ((SELECT atrium_readable_palaces())::bigint[]))"
WRITABLE = f"({SYSTEM} OR palace_id = ANY ((SELECT atrium_writable_palaces())::bigint[]))"
TABLE = "review_reviewcard"

FORWARD = f"""
ALTER TABLE {TABLE} ENABLE ROW LEVEL SECURITY;
ALTER TABLE {TABLE} FORCE ROW LEVEL SECURITY;
CREATE POLICY {TABLE}_read ON {TABLE} FOR SELECT USING {READABLE};
CREATE POLICY {TABLE}_insert ON {TABLE} FOR INSERT WITH CHECK {WRITABLE};
CREATE POLICY {TABLE}_update ON {TABLE} FOR UPDATE USING {WRITABLE} WITH CHECK {WRITABLE};
CREATE POLICY {TABLE}_delete ON {TABLE} FOR DELETE USING {WRITABLE};
"""
BACKWARD = "".join(
    f"DROP POLICY IF EXISTS {TABLE}_{name} ON {TABLE};\n" for name in ("read", "insert", "update", "delete")
) + f"ALTER TABLE {TABLE} NO FORCE ROW LEVEL SECURITY;\nALTER TABLE {TABLE} DISABLE ROW LEVEL SECURITY;\n"


class Migration(migrations.Migration):
    dependencies = [("review", "0001_initial"), ("memory", "0009_row_level_security")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
