from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.jobs import embeddings_backfill


class Command(BaseCommand):
    help = "Embed the memories saved without a vector (while the embedder was down)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch-size", type=int, default=32)
        parser.add_argument("--limit", type=int, default=None, help="embed at most this many")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["batch_size"] < 1 or (opts["limit"] is not None and opts["limit"] < 1):
            raise CommandError("--batch-size and --limit must be at least 1")
        result = embeddings_backfill(batch_size=opts["batch_size"], limit=opts["limit"])
        self.stdout.write(f"embedded {result.embedded}; {result.remaining} memories still without a vector")
        if result.degraded:
            raise CommandError(result.degraded)
