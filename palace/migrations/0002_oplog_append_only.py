"""The op log is append-only: a trigger refuses UPDATE and DELETE on its rows.

TRUNCATE stays possible for the table owner (a database administrator's tool, and how the test suite resets).
"""

from __future__ import annotations

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION palace_oplog_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'palace_oplog is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER palace_oplog_no_update_delete
    BEFORE UPDATE OR DELETE ON palace_oplog
    FOR EACH ROW EXECUTE FUNCTION palace_oplog_refuse_change();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS palace_oplog_no_update_delete ON palace_oplog;
DROP FUNCTION IF EXISTS palace_oplog_refuse_change();
"""


class Migration(migrations.Migration):
    dependencies = [("palace", "0001_initial")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
