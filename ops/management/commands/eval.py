"""`atrium eval --dataset FILE.jsonl [--k 5,10] [--json]`: retrieval quality through the real pipeline and search."""

from __future__ import annotations

import json
import logging
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ops.evaluation import SEARCH_DEPTH, SESSION_K, DatasetError, evaluate_dataset, load_dataset


def _parse_ks(raw: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(part) for part in raw.split(",") if part.strip())
    except ValueError as exc:
        raise CommandError(f"--k takes comma-separated positive integers, not {raw!r}") from exc
    if not ks or any(k < 1 or k > SEARCH_DEPTH for k in ks):
        raise CommandError(f"--k takes comma-separated integers between 1 and {SEARCH_DEPTH}")
    return ks


class Command(BaseCommand):
    help = (
        "Measure retrieval on a LoCoMo-style JSONL dataset: each conversation is saved turn by turn through the "
        "write pipeline into a throwaway palace (rolled back afterwards) and each question goes through search."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True, help="JSON Lines file, format in shared/bench/README.md")
        parser.add_argument("--k", default="5,10", help="cut-offs for Recall@k and any-hit@k (default 5,10)")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")

    def handle(self, *args: Any, **options: Any) -> None:
        ks = _parse_ks(options["k"])
        # One room opens every 9 turns; those notices would bury the report.
        logging.getLogger("palace.slots").setLevel(logging.ERROR)
        try:
            conversations = load_dataset(options["dataset"])
        except (OSError, DatasetError) as exc:
            raise CommandError(f"cannot read {options['dataset']}: {exc}") from exc
        _require_migrated()
        as_json = options["json"]
        # Progress goes to stderr in both modes: stdout stays one JSON object with --json.
        progress = lambda line: self.stderr.write(f"  {line}")  # noqa: E731 - a one-line callback
        report = evaluate_dataset(conversations=conversations, ks=ks, progress=progress)
        if as_json:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
            return
        columns = [*(f"recall@{k}" for k in report.ks), *(f"any_hit@{k}" for k in report.ks), "mrr"]
        columns.append(f"session_any_hit@{SESSION_K}")
        header = f"{'':<22}{'n':>5}" + "".join(f"{c:>20}" for c in columns)
        self.stdout.write(header)
        rows = [("categories 1-4", report.headline), *report.by_category.items(), ("all", report.overall)]
        for name, figures in rows:
            self.stdout.write(f"{name:<22}{figures['n']:>5}" + "".join(f"{figures[c]:>20.3f}" for c in columns))
        self.stdout.write(
            f"\n{report.turns} turns ingested in {report.ingest_seconds:.1f} s, "
            f"{report.overall['n']} questions "
            f"in {report.query_seconds:.1f} s; dispositions {report.dispositions}; search modes {report.modes}"
        )
        self.stdout.write(
            f"MRR is over the top {SEARCH_DEPTH} hits; image captions are part of each turn's content as "
            "[image: …]; speaker and session date are stored with every turn."
        )


def _require_migrated() -> None:
    """A database that `atrium up` (or `atrium migrate`) has never prepared gets a clear message, not a trace."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        raise CommandError("the database has unapplied migrations: run `uv run atrium migrate` (atrium up does it)")
