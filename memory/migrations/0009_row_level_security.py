"""Row-level security on the memory app's tables (the functions come from palace 0004; see palace/rls.py).

Memories and edges: readable in the acting user's palaces, writable where they are owner or editor. Access records
(a read, also a viewer's) carry no palace: they follow their memory, which must be readable to record it.
Evidence batches belong to the user who searched.
"""

from __future__ import annotations

from django.conf import settings
from django.db import migrations

SYSTEM = "(SELECT atrium_acting_system())"
READABLE = f"({SYSTEM} OR palace_id = ANY ((SELECT atrium_readable_palaces())::bigint[]))"
WRITABLE = f"({SYSTEM} OR palace_id = ANY ((SELECT atrium_writable_palaces())::bigint[]))"


def policies(table: str, *, read: str, write: str, insert: str | None = None) -> str:
    return f"""
ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
CREATE POLICY {table}_read ON {table} FOR SELECT USING {read};
CREATE POLICY {table}_insert ON {table} FOR INSERT WITH CHECK {insert or write};
CREATE POLICY {table}_update ON {table} FOR UPDATE USING {write} WITH CHECK {write};
CREATE POLICY {table}_delete ON {table} FOR DELETE USING {write};
"""


def drop(table: str) -> str:
    return "".join(
        f"DROP POLICY IF EXISTS {table}_{name} ON {table};\n" for name in ("read", "insert", "update", "delete")
    ) + f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY;\nALTER TABLE {table} DISABLE ROW LEVEL SECURITY;\n"


def via_memory(palaces: str) -> str:
    return (
        f"({SYSTEM} OR EXISTS (SELECT 1 FROM memory_memory m WHERE m.id = memory_id"
        f" AND m.palace_id = ANY ((SELECT {palaces}())::bigint[])))"
    )


OWN = f"({SYSTEM} OR user_id = (SELECT atrium_acting_user()))"

FORWARD = (
    policies("memory_memory", read=READABLE, write=WRITABLE)
    + policies("memory_edge", read=READABLE, write=WRITABLE)
    + policies(
        "memory_accessrecord",
        read=via_memory("atrium_readable_palaces"),
        write=via_memory("atrium_writable_palaces"),
        insert=via_memory("atrium_readable_palaces"),
    )
    + policies("memory_searchbatch", read=OWN, write=OWN)
)
BACKWARD = "".join(drop(t) for t in ("memory_memory", "memory_edge", "memory_accessrecord", "memory_searchbatch"))


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0008_active_placards_index"),
        ("palace", "0004_row_level_security"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
