#!/bin/sh
# A streaming standby of the primary (host `db`). On its first start: a base backup with -R (which writes
# primary_conninfo and standby.signal) and a replication slot of its own ($SLOT), so the primary keeps every WAL
# segment this standby has not received yet. Then the server, read-only (hot standby). Same role, same policies:
# the copy is physical, so row-level security holds here as on the primary.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  until pg_isready -h db -U replicator -q; do sleep 1; done
  pg_basebackup -h db -U replicator -D "$PGDATA" -R -X stream -C -S "$SLOT" -c fast \
    || pg_basebackup -h db -U replicator -D "$PGDATA" -R -X stream -S "$SLOT" -c fast  # the slot outlived an old copy
  chmod 0700 "$PGDATA"
fi
# hot_standby_feedback: the primary's vacuum waits for the standby's running queries instead of cancelling them.
exec postgres -c hot_standby=on -c hot_standby_feedback=on
