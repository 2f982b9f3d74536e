"""`atrium entity-eval [--entities FILE.json] [--details] [--json]`: precision and recall of entity extraction by
rules on a labelled set of texts, per split (dev, heldout) and overall, by name and kind and by name only
(ops.eval.entities)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ops.eval import DEFAULT_ENTITIES, EntitiesError, format_entity_report, load_entities, score_entities


class Command(BaseCommand):
    help = "Measure entity extraction by rules on labelled texts: precision and recall per split (dev, heldout)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--entities", default=str(DEFAULT_ENTITIES), help="the labelled set (JSON)")
        parser.add_argument("--details", action="store_true", help="list the dev split's wrong and missed names")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = score_entities(load_entities(Path(options["entities"])))
        except (OSError, EntitiesError) as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=1, ensure_ascii=False))
            return
        self.stdout.write(format_entity_report(report, details=options["details"]))
