"""`atrium`: Django's manage.py with Atrium's settings preset, so every management command is `atrium <cmd>`.

Before the command runs:
1. a bad configuration stops it with every problem at once (`atrium check` lists them without stopping);
2. with DATABASE_URL unset, the embedded PostgreSQL under ATRIUM_HOME is started or joined (config/prepare.py);
3. pending migrations are applied first on the embedded database (one line on stderr); against an external
   DATABASE_URL the command stops with one line saying to run `atrium migrate`.
Commands that never touch the database skip 2 and 3; the ones that manage migrations or must open on a database
in any state (migrate, makemigrations, shell, dbshell, up, …) skip 3.
"""

from __future__ import annotations

import contextlib
import os
import sys

# Commands spelled with hyphens on the command line live in modules spelled with underscores.
ALIASES = {
    "judge-eval": "judge_eval",
    "entity-eval": "entity_eval",
    "mcp-config": "mcp_config",
    "backfill-embeddings": "backfill_embeddings",
    "backfill-slots": "backfill_slots",
    "import": "import_file",
}

# Commands that never open a database connection: the embedded PostgreSQL is not started for them.
NO_DATABASE = frozenset(
    {
        "check",
        "help",
        "version",
        "collectstatic",
        "compilemessages",
        "makemessages",
        "diffsettings",
        "startapp",
        "judge-eval",
        "judge_eval",
        "entity-eval",
        "entity_eval",
        # restore starts the embedded database itself, after checking ATRIUM_HOME is empty (ops/backup.py)
        "restore",
    }
)
# Subcommands that never use this installation's database: `bench mcp` measures a server over HTTP (a throwaway one
# in a temporary ATRIUM_HOME, or the one at --url).
NO_DATABASE_SUBCOMMANDS = frozenset({("bench", "mcp")})
# Commands that work on a database with pending migrations, or manage them: they do not migrate first.
NO_MIGRATE_FIRST = NO_DATABASE | {
    "migrate",
    "makemigrations",
    "showmigrations",
    "sqlmigrate",
    "squashmigrations",
    "optimizemigration",
    "shell",
    "dbshell",
    "up",
    "flush",
    "sqlflush",
    "sqlsequencereset",
    "inspectdb",
    "test",
    "testserver",
    "createcachetable",
    "remove_stale_contenttypes",
    "backup",  # dumps the database as it is, migrated or not
}


class PendingMigrations(Exception):
    """An external database that `atrium migrate` has not brought up to date."""


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    argv = list(sys.argv)
    if len(argv) > 1:
        argv[1] = ALIASES.get(argv[1], argv[1])
    argv[0] = "atrium"
    try:
        from django.core.management import execute_from_command_line
    except ImportError as exc:  # pragma: no cover
        raise SystemExit("Django is not installed: run `uv sync` first") from exc
    from config.prepare import ConfigurationError
    from ops.embedded import EmbeddedError

    try:
        _prepare(argv)
        with _acting_context(argv):
            execute_from_command_line(argv)
    except ConfigurationError as exc:
        _fail(str(exc) + "\n(`atrium check` lists the same problems; deploy/.env.example documents every variable)")
    except (EmbeddedError, PendingMigrations) as exc:
        _fail(str(exc))


# Commands that get no row-level security context: a person at a shell sees what an unfiltered query would show a
# forgotten filter, nothing (palace/rls.py); every other command acts as the system.
NO_ACTING_CONTEXT = frozenset({"shell", "dbshell"})


def _acting_context(argv: list[str]) -> contextlib.AbstractContextManager[None]:
    command = argv[1] if len(argv) > 1 else "help"
    if command in NO_ACTING_CONTEXT or command in NO_DATABASE or command.startswith("-"):
        return contextlib.nullcontext()
    from palace.rls import acting_as_system

    return acting_as_system(f"command:{' '.join(argv[1:3])}")


def _prepare(argv: list[str]) -> None:
    import django
    from django.core.management import get_commands

    from config.prepare import refuse_bad_configuration, start_embedded_database

    command = argv[1] if len(argv) > 1 else "help"
    if command in {"check", "help", "version"} or command.startswith("-") or {"-h", "--help"} & set(argv[2:]):
        return  # `check` reports the configuration problems itself; help needs nothing
    refuse_bad_configuration()
    django.setup()  # the app registry only: nothing connects yet
    if command in NO_DATABASE or tuple(argv[1:3]) in NO_DATABASE_SUBCOMMANDS or command not in get_commands():
        return  # Django itself answers an unknown command
    start_embedded_database()
    # The operator's commands are long by nature (migrate builds indexes, import and export walk whole palaces):
    # the server's statement and idle-transaction timeouts are for requests, not for them. `up` too: it only
    # migrates and supervises; the web processes it starts load the settings afresh, with the timeouts.
    from django.conf import settings

    from config.dbtimeouts import lift_session_timeouts

    lift_session_timeouts(settings.DATABASES, settings.ATRIUM_DB_SESSION_OPTIONS)
    if command not in NO_MIGRATE_FIRST:
        _migrate_first()


def _migrate_first() -> None:
    from django.conf import settings
    from django.core.management import call_command

    from ops.health import pending_migrations

    pending = pending_migrations()
    if not pending:
        return
    if not settings.ATRIUM_EMBEDDED_POSTGRES:
        raise PendingMigrations(
            f"the database at DATABASE_URL has {len(pending)} unapplied migration(s): run `atrium migrate` first"
        )
    sys.stderr.write(f"atrium: applying {len(pending)} pending migration(s) to the embedded database first\n")
    call_command("migrate", interactive=False, verbosity=0)


def _fail(message: str) -> None:
    sys.stderr.write(f"atrium: {message}\n")
    raise SystemExit(2)


if __name__ == "__main__":
    main()
