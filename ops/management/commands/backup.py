"""`atrium backup FILE`: a consistent dump of the whole database plus a manifest (ops/backup.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ops.backup import BackupError, backup_create


class Command(BaseCommand):
    help = "Back up the whole server's database (embedded or external) to FILE, with a manifest."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"]).expanduser().resolve()
        try:
            manifest = backup_create(path=path)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        rows = sum(manifest["counts"].values())
        key = "present, not included" if manifest["secret_key"]["present"] else "none"
        self.stdout.write(
            f"wrote {path}: {len(manifest['counts'])} tables, {rows} rows, {manifest['dump_bytes']} bytes of dump"
            f" (secret key: {key}; back it up separately)"
        )
