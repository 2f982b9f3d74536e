"""`atrium eval --dataset FILE.jsonl [--k 5,10] [--method atrium|bm25|dense|rrf] [--background N] [--json] [--cv]`:
retrieval quality through the real write pipeline and search (ops.eval.retrieval); `--cv` cross-validates the
ranking's tuned constants leave-one-conversation-out (ops.eval.cv)."""

from __future__ import annotations

import json
import logging
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ops.eval import (
    METHODS,
    SEARCH_DEPTH,
    SESSION_K,
    CrossValidation,
    DatasetError,
    evaluate_cv,
    evaluate_dataset,
    load_dataset,
)


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
        "Measure retrieval on a LoCoMo-style JSONL dataset (transcript turns or agent-written facts): each "
        "conversation is saved item by item through the write pipeline into a throwaway palace (rolled back "
        "afterwards) and each question goes through search, or through a plain baseline (--method)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True, help="JSON Lines file, format in shared/bench/README.md")
        parser.add_argument("--k", default="5,10", help="cut-offs for Recall@k and any-hit@k (default 5,10)")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
        parser.add_argument(
            "--method",
            choices=METHODS,
            default="atrium",
            help="atrium (memory_search, default) or a plain baseline over the same stored memories",
        )
        parser.add_argument(
            "--background",
            type=int,
            default=0,
            metavar="N",
            help="first load N synthetic memories into three other palaces (removed afterwards)",
        )
        parser.add_argument(
            "--embedding-cache",
            default=None,
            metavar="FILE",
            help="reuse vectors from this SQLite file (created if missing): a second run skips the embedding",
        )
        parser.add_argument(
            "--cv",
            action="store_true",
            help="leave-one-conversation-out over the tuned ranking constants: in-sample and cross-validated "
            "figures and the constants chosen per fold (method atrium only)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        ks = _parse_ks(options["k"])
        # One room opens every 9 turns; those notices would bury the report.
        logging.getLogger("palace.slots").setLevel(logging.ERROR)
        if not 0 <= options["background"] <= 2_000_000:
            raise CommandError("--background must be between 0 and 2,000,000")
        try:
            conversations = load_dataset(options["dataset"])
        except OSError as exc:
            raise CommandError(f"cannot read {options['dataset']}: {exc.strerror or exc}") from None
        except DatasetError as exc:
            raise CommandError(f"{options['dataset']}: {exc}") from None
        if options["cv"]:
            _check_cv(conversations, options)
        _require_migrated()
        as_json = options["json"]
        # Progress goes to stderr in both modes: stdout stays one JSON object with --json.
        progress = lambda line: self.stderr.write(f"  {line}")  # noqa: E731 - a one-line callback
        if options["cv"]:
            self._cross_validate(conversations, options, progress)
            return
        report = evaluate_dataset(
            conversations=conversations,
            ks=ks,
            method=options["method"],
            background=options["background"],
            embedding_cache=options["embedding_cache"],
            progress=progress,
        )
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
        unit = "turns" if report.kind == "transcripts" else "facts"
        self.stdout.write(
            f"\n{report.items} {unit} ingested in {report.ingest_seconds:.1f} s, {report.overall['n']} questions "
            f"in {report.query_seconds:.1f} s; dispositions {report.dispositions}; search modes {report.modes}"
        )
        for what, how in report.as_dict()["protocol"].items():
            self.stdout.write(f"  {what}: {how}")
        if report.embedding_cache is not None:
            self.stdout.write(f"  embedding cache: {report.embedding_cache} (ingest time excludes cached vectors)")

    def _cross_validate(self, conversations: list[Any], options: dict[str, Any], progress: Any) -> None:
        result = evaluate_cv(conversations=conversations, embedding_cache=options["embedding_cache"], progress=progress)
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict(), indent=2))
            return
        self.stdout.write(_cv_table(result))


def _check_cv(conversations: list[Any], options: dict[str, Any]) -> None:
    if options["method"] != "atrium":
        raise CommandError("--cv tunes Atrium's ranking constants: a plain --method has none (drop --cv)")
    if options["background"]:
        raise CommandError("--cv runs without --background")
    if len(conversations) < 2:
        raise CommandError("--cv needs a dataset of at least two conversations (one is held out at a time)")


def _cv_table(result: CrossValidation) -> str:
    data = result.as_dict()
    lines = [f"{'categories 1-4':<44}{'n':>5}{'recall@10':>11}{'mrr':>8}"]
    for label, figures in (
        ("in-sample, constants as shipped", data["in_sample_shipped"]),
        ("in-sample, best variant on all folds", data["in_sample_best"]),
        ("cross-validated (held-out folds)", data["cross_validated"]),
    ):
        lines.append(f"{label:<44}{figures['n']:>5}{figures['recall@10']:>11.3f}{figures['mrr']:>8.3f}")
    lines.append(f"\nbest variant on all folds: {data['in_sample_best']['variant']}")
    for fold in data["folds"]:
        lines.append(
            f"  held out {fold['fold']}: chosen on the others {fold['chosen']}; held-out n {fold['n']} "
            f"recall@10 {fold['recall@10']:.3f} mrr {fold['mrr']:.3f}"
        )
    lines.append(f"  {data['variants']} variants; {data['protocol']}")
    return "\n".join(lines)


def _require_migrated() -> None:
    """A database that `atrium up` (or `atrium migrate`) has never prepared gets a clear message, not a trace."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        raise CommandError("the database has unapplied migrations: run `uv run atrium migrate` (atrium up does it)")
