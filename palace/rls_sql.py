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


def author_policies(table: str, author: str) -> str:
    """Replace `table`'s four palace policies with ones that also require `author` (a user id column) to be the acting
    user: rows private to their person even from the other members of the palace (a handoff)."""
    mine = f"{author} = (SELECT atrium_acting_user())"
    readable = f"({SYSTEM} OR (palace_id = ANY ((SELECT atrium_readable_palaces())::bigint[]) AND {mine}))"
    writable = f"({SYSTEM} OR (palace_id = ANY ((SELECT atrium_writable_palaces())::bigint[]) AND {mine}))"
    names = ("read", "insert", "update", "delete")
    drops = "".join(f"DROP POLICY IF EXISTS {table}_{name} ON {table};\n" for name in names)
    return (
        drops
        + f"""CREATE POLICY {table}_read ON {table} FOR SELECT USING {readable};
CREATE POLICY {table}_insert ON {table} FOR INSERT WITH CHECK {writable};
CREATE POLICY {table}_update ON {table} FOR UPDATE USING {writable} WITH CHECK {writable};
CREATE POLICY {table}_delete ON {table} FOR DELETE USING {writable};
"""
    )


def palace_only_policies(table: str) -> str:
    """The reverse of :func:`author_policies`: the four palace policies again, row-level security left on."""
    names = ("read", "insert", "update", "delete")
    drops = "".join(f"DROP POLICY IF EXISTS {table}_{name} ON {table};\n" for name in names)
    return drops + "\n".join(line for line in palace_policies(table).splitlines() if line.startswith("CREATE"))
