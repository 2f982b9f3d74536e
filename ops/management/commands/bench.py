"""`atrium bench search --memories N [--json]`, `atrium bench ingest --turns N [--json]` and `atrium bench mcp …`:
speed measured, never asserted in tests."""

from __future__ import annotations

import json
import logging
import signal
import sys
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ops import bench


class Command(BaseCommand):
    help = (
        "Benchmarks: `search` (search/save latency and ingest throughput at N memories), `ingest` (backfill turns/s "
        "against the embedder alone) and `mcp`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="target", required=True, metavar="{search,ingest,ledger,mcp}")
        search = sub.add_parser("search", help="search, save and batch-ingest speed at N synthetic memories")
        search.add_argument("--memories", type=int, required=True, help="memories in the bench palace (N)")
        search.add_argument("--palaces", type=int, default=3, help="small palaces holding N/2 memories (default 3)")
        search.add_argument("--queries", type=int, default=200, help="measured searches (default 200)")
        search.add_argument("--saves", type=int, default=50, help="measured single saves (default 50)")
        search.add_argument(
            "--recall-sample", type=int, default=50, help="queries whose vector recall is measured (default 50)"
        )
        search.add_argument(
            "--ef-sweep",
            default="",
            help="comma-separated hnsw.ef_search values whose recall and vector-statement time are measured too",
        )
        search.add_argument(
            "--vectors",
            choices=["subspace", "isotropic"],
            default="subspace",
            help="synthetic vector model (ops.bench.synthetic; default subspace, as real embeddings measured)",
        )
        search.add_argument(
            "--texts",
            type=Path,
            default=None,
            help="a UTF-8 file, one memory a line: the palaces hold its first N + N/2 lines with their real"
            " embeddings (kept beside it as FILE.<model>.npz), the queries are its later lines (ops.bench.corpus)",
        )
        search.add_argument(
            "--query-texts", type=Path, default=None, help="a UTF-8 file, one query a line (embedded as queries)"
        )
        search.add_argument("--json", action="store_true", help="print one JSON object")
        ingest = sub.add_parser("ingest", help="backfill throughput: N synthetic turns, and the embedder alone")
        ingest.add_argument("--turns", type=int, required=True, help="work turns to backfill (1-5000)")
        ingest.add_argument("--json", action="store_true", help="print one JSON object")
        ledger = sub.add_parser("ledger", help="a team's year of op log, access records and rulings: sizes, reads")
        ledger.add_argument("--people", type=int, default=50, help="people in the team (default 50)")
        ledger.add_argument("--days", type=int, default=365, help="days of traffic back from now (default 365)")
        ledger.add_argument("--json", action="store_true", help="print one JSON object")
        mcp = sub.add_parser("mcp", help="MCP tool-call latency against a server, over HTTP (ops.bench_mcp)")
        mcp.add_argument("--clients", type=int, default=20, help="concurrent MCP clients (default 20)")
        mcp.add_argument("--seconds", type=float, default=30.0, help="how long they run (default 30)")
        mcp.add_argument("--url", default=None, help="a running server's MCP URL (default: start one)")
        mcp.add_argument("--token", action="append", default=[], help="write token for --url (repeatable)")
        mcp.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["target"] == "mcp":
            self._mcp(options)
            return
        if options["target"] == "ledger":
            self._ledger(options)
            return
        if options["target"] == "ingest":
            self._ingest(options)
            return
        n, palaces = options["memories"], options["palaces"]
        if not 1 <= n <= 2_000_000:
            raise CommandError("--memories must be between 1 and 2,000,000")
        if not 1 <= palaces <= 10_000:
            raise CommandError("--palaces must be between 1 and 10,000")
        if options["queries"] < 1 or options["saves"] < 1 or options["recall_sample"] < 1:
            raise CommandError("--queries, --saves and --recall-sample must be positive")
        try:
            sweep = tuple(int(v) for v in options["ef_sweep"].split(",") if v.strip())
        except ValueError as exc:
            raise CommandError("--ef-sweep takes whole numbers separated by commas, e.g. 40,200,400") from exc
        if any(not 1 <= ef <= 1000 for ef in sweep):
            raise CommandError("--ef-sweep values must be between 1 and 1,000 (pgvector's range)")
        logging.getLogger("palace.slots").setLevel(logging.ERROR)
        from ops.bench import CorpusError, run_search_bench

        # A bench drops the HNSW index for its bulk load and rebuilds it, and removes its palaces, in `finally`
        # blocks: make SIGTERM unwind like Ctrl-C so they run (a killed bench once left a database without index).
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
        # Progress goes to stderr with --json too: a million-row run takes most of an hour.
        try:
            data = run_search_bench(
                memories=n,
                palaces=palaces,
                queries=options["queries"],
                saves=options["saves"],
                recall_sample=options["recall_sample"],
                ef_sweep=sweep,
                vectors=options["vectors"],
                texts=options["texts"],
                query_texts=options["query_texts"],
                progress=lambda line: self.stderr.write(f"  [{time.strftime('%H:%M:%S')}] {line}"),
            )
        except CorpusError as exc:
            raise CommandError(f"--texts/--query-texts: {exc}") from exc
        if options["json"]:
            self.stdout.write(json.dumps(data, indent=2))
            return
        self._print_search(data)

    def _print_search(self, data: dict[str, Any]) -> None:
        for key in (
            "search_ms",
            "search_total_ms",
            "search_filtered_ms",
            "search_filtered_total_ms",
            "search_as_system_ms",
            "search_as_of_ms",
            "query_embed_ms",
            "save_ms",
            "save_embed_ms",
            "save_pipeline_ms",
        ):
            figures = data[key]
            self.stdout.write(
                f"{key:<25} p50 {figures['p50']:>8.2f}  p95 {figures['p95']:>8.2f}  p99 {figures['p99']:>8.2f}"
                f"  (n={figures['n']})"
            )
        self.stdout.write(f"{'vector recall@10':<25} {data['vector_recall']} (owner), "
                          f"{data['vector_recall_filtered']} (member of three small palaces)")  # fmt: skip
        self.stdout.write(f"{'':<25} on {data['vector_recall_on']}")
        self.stdout.write(f"{'commit_ms':<25} {data['commit_ms']:.2f} (not included in save_ms)")
        self.stdout.write(f"{'ingest':<25} {data['ingest_per_second']} memories/s (batches of 10)")
        places = data["palaces"]
        self.stdout.write(
            f"{places['big_palace_memories']} memories in the bench palace, {places['small_palaces_memories']} in "
            f"{places['small']} others; loaded in {data['load_seconds']} s ({data['load_rows_per_second']} rows/s), "
            f"indexes built in {data['index_build_seconds']['total']} s; table {data['table_bytes']:,} bytes, "
            f"indexes {data['index_bytes']['total']:,} bytes"
        )
        self.stdout.write(
            f"load average {data['load_average_before']} before, {data['load_average_after']} after; "
            f"search modes {data['search_modes']}; vector arm {data['vector_arm_settings']}"
        )
        for what, how in data["synthetic"].items():
            self.stdout.write(f"  {what}: {how}")

    def _ingest(self, options: dict[str, Any]) -> None:
        turns = options["turns"]
        if not 1 <= turns <= 5000:
            raise CommandError("--turns must be between 1 and 5,000 (a backfill run's ceiling)")
        logging.getLogger("palace.slots").setLevel(logging.ERROR)
        as_json = options["json"]
        data = bench.run_ingest_bench(
            turns=turns, progress=None if as_json else (lambda line: self.stderr.write(f"  {line}"))
        )
        if as_json:
            self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False))
            return
        self.stdout.write(
            f"{data['turns_per_second']} turns/s through the backfill; the embedder alone allows "
            f"{data['limit_turns_per_second']} turns/s for these texts ({data['texts_per_turn']} a turn): "
            f"share_of_limit {data['share_of_limit']} (goal >= {data['goal_share_of_limit']})"
        )
        self.stdout.write(f"{data['ten_thousand_turns']}; load average {data['load_average_before']}")

    def _ledger(self, options: dict[str, Any]) -> None:
        if not 1 <= options["people"] <= 1000 or not 1 <= options["days"] <= 3650:
            raise CommandError("--people must be 1–1,000 and --days 1–3,650")
        signal.signal(signal.SIGTERM, _exit_on_sigterm)  # the bench rows are removed in a `finally`
        say = None if options["json"] else (lambda line: self.stderr.write(f"  {line}"))
        data = bench.run_ledger_bench(people=options["people"], days=options["days"], progress=say)
        self.stdout.write(json.dumps(data, indent=2))

    def _mcp(self, options: dict[str, Any]) -> None:
        clients, seconds, url, tokens = options["clients"], options["seconds"], options["url"], options["token"]
        if not 1 <= clients <= 500 or not 0 < seconds <= 3600:
            raise CommandError("--clients must be 1–500 and --seconds 0–3600")
        if url and not tokens:
            raise CommandError("--url needs at least one --token (a write token of that server)")
        bench.run_mcp_bench(
            clients=clients, seconds=seconds, url=url, tokens=tokens, as_json=options["json"], stdout=self.stdout
        )


def _exit_on_sigterm(signum: int, frame: object) -> None:
    sys.exit(128 + signum)
