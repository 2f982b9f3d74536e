"""The SQL of a palace-scoped table's row-level security policies, for migrations (see palace/rls.py for the acting
context they read). A row is readable in the acting user's palaces and writable where they are owner or editor; the
system (jobs, commands, the admin) reads and writes every row. The helper functions come from palace 0004."""

from __future__ import annotations

SYSTEM = "(SELECT atrium_acting_system())"
READABLE = f"({SYSTEM} OR palace_id = ANY ((SELECT atrium_readable_palaces())::bigint[]))"
WRITABLE = f"({SYSTEM} OR palace_id = ANY ((SELECT atrium_writable_palaces())::bigint[]))"


def palace_policies(table: str) -> str:
    """ENABLE and FORCE row-level security on `table` (which has a `palace_id`), with the four policies."""
    return f"""
ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
CREATE POLICY {table}_read ON {table} FOR SELECT USING {READABLE};
CREATE POLICY {table}_insert ON {table} FOR INSERT WITH CHECK {WRITABLE};
CREATE POLICY {table}_update ON {table} FOR UPDATE USING {WRITABLE} WITH CHECK {WRITABLE};
CREATE POLICY {table}_delete ON {table} FOR DELETE USING {WRITABLE};
"""


def drop_palace_policies(table: str) -> str:
    """The reverse of :func:`palace_policies`."""
    names = ("read", "insert", "update", "delete")
    drops = "".join(f"DROP POLICY IF EXISTS {table}_{name} ON {table};\n" for name in names)
    off = f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY;\nALTER TABLE {table} DISABLE ROW LEVEL SECURITY;\n"
    return drops + off
