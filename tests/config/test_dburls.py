"""DATABASE_REPLICA_URLS parsing (config/dburls.py) and the router's answers without replicas (config/dbrouter.py)."""

from __future__ import annotations

from typing import Any

from django.db import connections

from config import dbrouter
from config.dburls import replica_databases
from memory.models import Memory

OPTIONS: dict[str, Any] = {"conn_max_age": 60, "session_options": "-c statement_timeout=30000"}


def test_each_replica_url_becomes_a_mirror_entry_with_the_primarys_options() -> None:
    problems: list[tuple[str, str, str]] = []
    entries = replica_databases(
        ["postgresql://atrium:pw@standby-1:5433/atrium", "postgres://atrium@standby-2/atrium?sslmode=require"],
        options=OPTIONS,
        problem=lambda *p: problems.append(p),
    )
    assert problems == []
    assert list(entries) == ["replica_1", "replica_2"]
    first, second = entries["replica_1"], entries["replica_2"]
    assert (first["HOST"], first["PORT"], first["USER"], first["PASSWORD"]) == ("standby-1", "5433", "atrium", "pw")
    assert first["CONN_MAX_AGE"] == 60 and first["TEST"] == {"MIRROR": "default"}
    assert second["OPTIONS"] == {"sslmode": "require", "options": "-c statement_timeout=30000"}


def test_a_bad_replica_url_is_a_configuration_error_naming_it() -> None:
    problems: list[tuple[str, str, str]] = []
    entries = replica_databases(
        ["mysql://x@y/z", "postgresql://atrium@standby/atrium"], options=OPTIONS, problem=lambda *p: problems.append(p)
    )
    assert problems == [
        ("atrium.E006", "DATABASE_REPLICA_URLS", "replica 1: must be a postgresql:// URL, not mysql://")
    ]
    assert list(entries) == ["replica_2"]  # numbered by position, so the message and the alias agree


def test_without_replicas_the_router_answers_nothing_and_watches_nothing(db: Any) -> None:
    assert dbrouter.replica_aliases() == []
    router = dbrouter.ReplicaRouter()
    assert router.db_for_read(Memory) is None and router.db_for_write(Memory) is None
    assert dbrouter.read_alias() == "default"
    connections["default"].ensure_connection()
    assert not any(isinstance(w, dbrouter.WriteWatch) for w in connections["default"].execute_wrappers)


def test_statements_that_change_nothing_are_not_taken_as_writes() -> None:
    reads = ("SELECT 1", "  (SELECT 1) UNION (SELECT 2)", "SAVEPOINT s1", "SET LOCAL x = 1", "SELECT 1 FOR UPDATE")
    for sql in (*reads, "\nWITH named AS (SELECT e.id FROM memory_entity e) SELECT * FROM named"):
        assert not dbrouter.is_write(sql), sql
    for sql in (
        'INSERT INTO "memory_memory" VALUES (1)',
        "UPDATE t SET a = 1",
        "WITH b AS (INSERT INTO t VALUES (1)) SELECT 1",
        "DELETE FROM t",
    ):
        assert dbrouter.is_write(sql), sql
