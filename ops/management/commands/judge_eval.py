"""`atrium judge-eval [--pairs FILE.jsonl] [--fake] [--base-url URL --model NAME [--api-key-env VAR]] [--json]`:
precision and recall of "contradiction" and "same fact" on a labelled set of pairs, for the rules and for the model
path (ops.eval.judge)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.judge import JudgeConfig
from memory.providers import LLMConfig
from ops.eval import (
    DEFAULT_PAIRS,
    PairsError,
    evaluate_pairs,
    fake_model,
    fixed,
    format_report,
    load_pairs,
    rules_only,
    similarities,
)


class Command(BaseCommand):
    help = (
        "Measure the write-time judge on labelled pairs (same / contradiction / compatible): the rules alone, and "
        "the model path against the fake OpenAI-compatible server (--fake) and/or a real endpoint (--base-url)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--pairs", default=str(DEFAULT_PAIRS), help="JSON Lines of labelled pairs")
        parser.add_argument("--fake", action="store_true", help="also run the model path against the fake server")
        parser.add_argument("--base-url", default="", help="also run against this OpenAI-compatible endpoint")
        parser.add_argument("--model", default="", help="the model at --base-url")
        parser.add_argument("--api-key-env", default="", help="environment variable holding the endpoint's key")
        parser.add_argument("--timeout-ms", type=int, default=3000)
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            pairs = load_pairs(Path(options["pairs"]))
        except (OSError, PairsError) as exc:
            raise CommandError(str(exc)) from exc
        sims = similarities(pairs)
        reports = [evaluate_pairs(pairs, path="rules", judge_for=rules_only, sims=sims).report()]
        if options["fake"]:
            try:
                judge_for = fake_model(options["timeout_ms"])
            except ImportError as exc:
                raise CommandError("--fake needs the test suite's tests/fakes (run from a source checkout)") from exc
            reports.append(
                evaluate_pairs(pairs, path="model (fake server, scripted)", judge_for=judge_for, sims=sims).report()
            )
        if options["base_url"]:
            if not options["model"]:
                raise CommandError("--base-url needs --model")
            key = os.environ.get(options["api_key_env"], "") if options["api_key_env"] else ""
            try:
                llm = LLMConfig(
                    base_url=options["base_url"],
                    api_key=key,
                    model=options["model"],
                    timeout_s=options["timeout_ms"] / 1000,
                    max_retries=0,
                )
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
            config = JudgeConfig(llm=llm, off_reason="", timeout_ms=options["timeout_ms"])
            reports.append(
                evaluate_pairs(pairs, path=f"model {options['model']}", judge_for=fixed(config), sims=sims).report()
            )
        if options["json"]:
            self.stdout.write(json.dumps(reports, indent=1))
            return
        self.stdout.write("\n\n".join(format_report(r) for r in reports))
