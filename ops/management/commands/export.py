"""`atrium export --user NAME [--project ORIGIN] --format json|markdown [--redacted] --out FILE`

Writes what NAME may read (or one project of it) as the export document (ops/portability/exporting.py) or a Markdown
vault (ops/portability/markdown.py). Row-level security acts as NAME while it reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ops.portability import export_document, markdown_zip
from palace.errors import AtriumError


def user_named(name: str) -> Any:
    try:
        return get_user_model().objects.get(username=name, is_active=True)
    except get_user_model().DoesNotExist:
        raise CommandError(f"no active user named {name!r}") from None


def export_bytes(document: dict[str, Any], fmt: str) -> bytes:
    if fmt == "markdown":
        return markdown_zip(document)
    return json.dumps(document, ensure_ascii=False, indent=1).encode()


class Command(BaseCommand):
    help = "Export the memories a user can read as JSON (lossless) or a Markdown vault (zip)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True)
        parser.add_argument("--project", default=None, metavar="ORIGIN")
        parser.add_argument("--format", choices=("json", "markdown"), default="json")
        parser.add_argument("--redacted", action="store_true", help="second redaction pass, 40-character previews")
        parser.add_argument("--out", required=True, metavar="FILE")

    def handle(self, *args: Any, **options: Any) -> None:
        user = user_named(options["user"])
        try:
            document = export_document(user=user, project=options["project"], redacted=options["redacted"])
        except AtriumError as exc:
            raise CommandError(exc.message) from exc
        data = export_bytes(document, options["format"])
        Path(options["out"]).write_bytes(data)
        memories = sum(len(p["memories"]) for p in document["palaces"])
        self.stdout.write(
            f"wrote {options['out']}: {len(document['palaces'])} palace(s), {memories} memories, {len(data)} bytes"
            f" ({options['format']}{', redacted' if options['redacted'] else ''})"
        )
