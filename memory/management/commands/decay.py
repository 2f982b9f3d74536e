from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory.jobs import decay_run


class Command(BaseCommand):
    help = "Archive long-unused memories of low importance or low confidence (restorable); never those under review."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="list what would be archived, change nothing")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args: Any, **opts: Any) -> None:
        result = decay_run(dry_run=opts["dry_run"])
        if opts["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "dry_run": result.dry_run,
                        "cutoff": result.cutoff.isoformat(),
                        "importance_below": result.importance_below,
                        "confidence_below": result.confidence_below,
                        "candidates": result.candidates,
                        "archived": result.archived,
                        "why": {str(pk): why for pk, why in result.why.items()},
                    }
                )
            )
            return
        verb = "would archive" if result.dry_run else "archived"
        count = len(result.candidates) if result.dry_run else len(result.archived)
        ids = result.candidates if result.dry_run else result.archived
        self.stdout.write(
            f"decay: {verb} {count} memories (untouched since before {result.cutoff:%Y-%m-%d}, "
            f"importance below {result.importance_below} or confidence below {result.confidence_below})"
        )
        if ids:
            self.stdout.write("  " + " ".join(f"#{pk}" for pk in ids))
        for pk in ids:
            self.stdout.write(f"  #{pk}: {result.why[pk]}")
