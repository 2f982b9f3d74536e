from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memory.jobs import slots_backfill


class Command(BaseCommand):
    help = "Pin every memory without a room#slot to one (idempotent: run it as often as you like)."

    def handle(self, *args: Any, **opts: Any) -> None:
        count = slots_backfill()
        self.stdout.write(f"slotted {count} memories")
