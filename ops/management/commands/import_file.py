"""`atrium import FILE --user NAME [--project ORIGIN]`: load an export (ops/portability/importing.py says how)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ops.management.commands.export import user_named
from ops.portability import import_document
from palace.errors import AtriumError


class Command(BaseCommand):
    help = "Import a JSON export into a user's palaces: losslessly into an empty palace, else through the pipeline."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--user", required=True)
        parser.add_argument("--project", default=None, metavar="ORIGIN")

    def handle(self, *args: Any, **options: Any) -> None:
        user = user_named(options["user"])
        try:
            document = json.loads(Path(options["file"]).read_bytes())
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read {options['file']} as JSON: {exc}") from exc
        try:
            report = import_document(
                document=document, user=user, project=options["project"], source=Path(options["file"]).name
            )
        except AtriumError as exc:
            raise CommandError(exc.message) from exc
        for p in report.palaces:
            done = p.counts if p.mode == "lossless" else p.dispositions
            self.stdout.write(f"{p.label}: {p.mode} {json.dumps(done)}")
            if p.skipped:
                self.stdout.write(f"  skipped: {json.dumps(p.skipped)}")
            if p.missing_people:
                self.stdout.write(f"  people not on this server: {', '.join(p.missing_people)}")
