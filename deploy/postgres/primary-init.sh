#!/bin/sh
# Runs once, when the primary's data directory is created (the image's /docker-entrypoint-initdb.d): the role the app
# connects as, which row-level security binds (no superuser, no BYPASSRLS: README, Isolation), pgvector, the
# LEAKPROOF full-text match the lexical arm needs under the policies, pg_prewarm (autoprewarm, loaded in
# compose.yaml), and the role the standbys replicate as.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres <<SQL
CREATE ROLE atrium LOGIN PASSWORD '${ATRIUM_DB_PASSWORD}' NOSUPERUSER NOBYPASSRLS;
CREATE DATABASE atrium OWNER atrium;
CREATE ROLE replicator LOGIN REPLICATION PASSWORD '${ATRIUM_REPLICATION_PASSWORD}';
SQL
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname atrium <<SQL
CREATE EXTENSION vector;
CREATE EXTENSION pg_prewarm;
ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;
SQL
# Streaming replication connects to the pseudo-database "replication", which "host all all ..." does not cover.
echo "host replication replicator all scram-sha-256" >> "$PGDATA/pg_hba.conf"
