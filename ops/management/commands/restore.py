"""`atrium restore FILE`: restore a backup into an empty ATRIUM_HOME (or an empty database at DATABASE_URL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ops.backup import BackupError, backup_restore


class Command(BaseCommand):
    help = "Restore a backup made by `atrium backup` into an empty ATRIUM_HOME or empty external database."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"]).expanduser().resolve()
        try:
            report = backup_restore(path=path, home=Path(settings.ATRIUM_HOME), database_url=settings.DATABASE_URL)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        rows = sum(report.counts.values())
        self.stdout.write(
            f"restored {path} (made {report.manifest['created_at']}): {len(report.counts)} tables, {rows} rows,"
            " every count as in the backup"
        )
        self.stdout.write(f"note: {report.secret_key_note}")
