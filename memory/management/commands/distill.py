from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory.jobs import distill_run


class Command(BaseCommand):
    help = "Merge clusters of same-topic memories into higher-level rules (the LLM when configured, else rules)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--suggest", action="store_true", help="propose merges without applying them")
        parser.add_argument(
            "--preview-with-llm", action="store_true", help="with --suggest: let the LLM write the previews"
        )
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args: Any, **opts: Any) -> None:
        result = distill_run(mode="suggest" if opts["suggest"] else "apply", preview_with_llm=opts["preview_with_llm"])
        if opts["json"]:
            payload = {
                "mode": result.mode,
                "llm_configured": result.llm_configured,
                "applied": result.applied,
                "clusters": [asdict(c) for c in result.clusters],
            }
            self.stdout.write(json.dumps(payload, ensure_ascii=False))
            return
        self.stdout.write(
            f"distill ({result.mode}): {len(result.clusters)} clusters, {result.applied} applied"
            f" (LLM {'configured' if result.llm_configured else 'not configured'})"
        )
        for c in result.clusters:
            done = f" → rule #{c.rule_id}" if c.rule_id else (f" skipped: {c.skipped}" if c.skipped else "")
            members = " ".join(f"#{pk}" for pk in c.member_ids)
            self.stdout.write(f"- palace {c.palace_id} {c.kind} [{members}] by {c.producer}{done}")
            self.stdout.write(f"  {c.placard}: {c.content[:160]}")
            if c.fallback:
                self.stdout.write(f"  ({c.fallback})")
