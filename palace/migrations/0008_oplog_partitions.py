"""The op log in time partitions (issue 29): one partition per calendar month (UTC) of `created_at`, plus a DEFAULT
partition for a row no month's partition takes. Its history is never pruned; old months become partitions nobody
writes again (autovacuum leaves them alone once frozen, an operator may move them to a cheaper tablespace), and
every reader keeps reading `palace_oplog` itself: the Log page, the audit console, a memory's history, restore and
export see every month through the parent (palace/oplog/partitions.py).

What changes in the table, and what does not:
- the primary key becomes (id, created_at) (PostgreSQL requires the partition key in it); ids still come from one
  sequence, `palace_oplog_id_seq`, set past every id the old identity column gave out, so `id` stays unique;
- the same columns, indexes (by their Django names), foreign keys, append-only trigger (palace 0002, which a
  partitioned table clones onto every partition) and row-level security policies (palace 0004) on the parent;
- every partition has row-level security enabled and forced with the parent's four policies
  (`atrium_oplog_partition_secure`): read directly, it shows what the parent would (pg_dump reads each partition
  directly, so a backup holds every row), and the append-only trigger is cloned onto it.
- `atrium_oplog_partition(month)` creates a month's partition (idempotent); the daily beat task keeps the next
  months ready (ops/tasks.py). A month whose rows already sit in the DEFAULT partition is left there and said so.

Existing rows are copied in id order inside this migration's transaction; the old table is dropped after.
"""

from __future__ import annotations

import importlib

from django.db import migrations

_RLS = importlib.import_module("palace.migrations.0004_row_level_security")

AHEAD_MONTHS = 3

POLICIES = (
    ("read", "SELECT", "USING"),
    ("insert", "INSERT", "WITH CHECK"),
    ("update", "UPDATE", "USING"),
    ("delete", "DELETE", "USING"),
)

# ENABLE + FORCE and the parent's four policies on one partition: pg_dump (with row security, ops/backup.py) reads
# each partition directly, so a partition must show the system every row, and anyone else what the parent would.
SECURE_FUNCTION = (
    """
CREATE OR REPLACE FUNCTION atrium_oplog_partition_secure(name text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', name);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', name);
"""
    + "".join(
        f"    EXECUTE format('CREATE POLICY %I ON %I FOR {command} {clause} {_RLS.OPLOG_VISIBLE}', "
        f"name || '_{policy}', name);\n"
        for policy, command, clause in POLICIES
    )
    + """END
$$;
"""
)

PARTITION_FUNCTION = """
CREATE OR REPLACE FUNCTION atrium_oplog_partition(month date) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    month_start date := date_trunc('month', month::timestamp)::date;
    month_end date := (date_trunc('month', month::timestamp) + interval '1 month')::date;
    name text := format('palace_oplog_p%s', to_char(month_start, 'YYYY_MM'));
BEGIN
    IF to_regclass(name) IS NOT NULL THEN
        RETURN 'exists';
    END IF;
    BEGIN
        EXECUTE format(
            'CREATE TABLE %I PARTITION OF palace_oplog FOR VALUES FROM (%L) TO (%L)',
            name, month_start::timestamp AT TIME ZONE 'UTC', month_end::timestamp AT TIME ZONE 'UTC'
        );
    EXCEPTION WHEN check_violation THEN
        RETURN 'held';  -- rows of this month already sit in the DEFAULT partition: they stay there
    END;
    PERFORM atrium_oplog_partition_secure(name);
    RETURN 'created';
END
$$;
"""

# What the table carries besides its columns, by the names Django gave them (palace 0001, 0002, 0004), made again
# on the new table in both directions.
REBUILT = f"""
CREATE INDEX oplog_palace_time ON palace_oplog (palace_id, created_at DESC);
CREATE INDEX oplog_target ON palace_oplog (target_kind, target_id);
CREATE INDEX palace_oplog_actor_user_id_6fdc5c95 ON palace_oplog (actor_user_id);
CREATE INDEX palace_oplog_created_at_44274dd7 ON palace_oplog (created_at);
CREATE INDEX palace_oplog_op_72a9e2ba ON palace_oplog (op);
CREATE INDEX palace_oplog_op_72a9e2ba_like ON palace_oplog (op varchar_pattern_ops);
CREATE INDEX palace_oplog_palace_id_95fb6b29 ON palace_oplog (palace_id);
ALTER TABLE palace_oplog ADD CONSTRAINT palace_oplog_actor_user_id_6fdc5c95_fk_auth_user_id
    FOREIGN KEY (actor_user_id) REFERENCES auth_user (id) DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE palace_oplog ADD CONSTRAINT palace_oplog_palace_id_95fb6b29_fk_palace_palace_id
    FOREIGN KEY (palace_id) REFERENCES palace_palace (id) DEFERRABLE INITIALLY DEFERRED;
CREATE TRIGGER palace_oplog_no_update_delete
    BEFORE UPDATE OR DELETE ON palace_oplog
    FOR EACH ROW EXECUTE FUNCTION palace_oplog_refuse_change();
{_RLS.OPLOG}"""

FORWARD = f"""
ALTER TABLE palace_oplog RENAME TO palace_oplog_unpartitioned;
ALTER TABLE palace_oplog_unpartitioned NO FORCE ROW LEVEL SECURITY;
CREATE TABLE palace_oplog (LIKE palace_oplog_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    PARTITION BY RANGE (created_at);
CREATE TABLE palace_oplog_default PARTITION OF palace_oplog DEFAULT;
{SECURE_FUNCTION}
SELECT atrium_oplog_partition_secure('palace_oplog_default');
{PARTITION_FUNCTION}
SELECT atrium_oplog_partition(month::date) FROM generate_series(
    date_trunc('month', coalesce((SELECT min(created_at) FROM palace_oplog_unpartitioned), now()) AT TIME ZONE 'UTC'),
    date_trunc('month', now() AT TIME ZONE 'UTC') + interval '{AHEAD_MONTHS} months',
    interval '1 month'
) AS month;
INSERT INTO palace_oplog SELECT * FROM palace_oplog_unpartitioned ORDER BY id;
DO $$
DECLARE
    last bigint;
BEGIN
    EXECUTE format(
        'SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM %s',
        pg_get_serial_sequence('palace_oplog_unpartitioned', 'id')
    ) INTO last;
    last := greatest(last, coalesce((SELECT max(id) FROM palace_oplog_unpartitioned), 0));
    DROP TABLE palace_oplog_unpartitioned;
    CREATE SEQUENCE palace_oplog_id_seq OWNED BY palace_oplog.id;
    PERFORM setval('palace_oplog_id_seq', last + 1, false);
END
$$;
ALTER TABLE palace_oplog ALTER COLUMN id SET DEFAULT nextval('palace_oplog_id_seq');
ALTER TABLE palace_oplog ADD CONSTRAINT palace_oplog_pkey PRIMARY KEY (id, created_at);
{REBUILT}
"""

# Back to one table (every row copied), with an identity column continuing from the sequence.
BACKWARD = f"""
ALTER TABLE palace_oplog RENAME TO palace_oplog_partitioned;
ALTER TABLE palace_oplog_partitioned NO FORCE ROW LEVEL SECURITY;
CREATE TABLE palace_oplog (LIKE palace_oplog_partitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
ALTER TABLE palace_oplog ALTER COLUMN id DROP DEFAULT;
ALTER TABLE palace_oplog ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY;
INSERT INTO palace_oplog SELECT * FROM palace_oplog_partitioned ORDER BY id;
SELECT setval(pg_get_serial_sequence('palace_oplog', 'id'), coalesce(max(id), 0) + 1, false) FROM palace_oplog;
DROP TABLE palace_oplog_partitioned;
DROP FUNCTION IF EXISTS atrium_oplog_partition(date);
DROP FUNCTION IF EXISTS atrium_oplog_partition_secure(text);
ALTER TABLE palace_oplog ADD CONSTRAINT palace_oplog_pkey PRIMARY KEY (id);
{REBUILT}
"""


class Migration(migrations.Migration):
    dependencies = [("palace", "0007_project_request")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
