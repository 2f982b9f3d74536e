"""`atrium backfill PATH… --user NAME [--dry-run] [rules] [--wait]`: import past sessions from transcripts this
machine can read (capture/backfill). A dry run prints the zero-cost estimate; otherwise the run is queued on the
worker, and --wait follows its progress until it ends."""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from capture.backfill import BackfillEstimate, backfill_estimate, backfill_read_paths, backfill_start
from capture.importers import BackfillRules, RulesError
from capture.models import BackfillRun
from capture.tasks import enqueue_backfill_run
from ops.management.commands.export import user_named
from palace.errors import AtriumError

POLL_S = 1.0
ENDED = (BackfillRun.State.DONE, BackfillRun.State.FAILED, BackfillRun.State.PAUSED, BackfillRun.State.CANCELLED)


class Command(BaseCommand):
    help = "Backfill past agent sessions (Claude Code, Codex, OpenAI messages) into a user's palaces."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH", help="transcript files or folders (e.g. ~/.claude)")
        parser.add_argument("--user", required=True, help="whose palaces the sessions go to")
        parser.add_argument("--dry-run", action="store_true", help="print the estimate only (no model, no embedding)")
        parser.add_argument("--days", type=int, default=7, help="sessions active in the last N days (0 = all; 7)")
        parser.add_argument("--turns-per-session", type=int, default=20, help="first N turns of a session (20)")
        parser.add_argument("--max-turns", type=int, default=200, help="turns in the whole run, 1-5000 (200)")
        parser.add_argument("--include-sidechains", action="store_true", help="subagent sessions too")
        parser.add_argument("--include-no-cwd", action="store_true", help="sessions that do not say where they ran")
        parser.add_argument(
            "--map", action="append", default=[], metavar="CWD=ORIGIN", help="a folder's project (repeatable)"
        )
        parser.add_argument("--wait", action="store_true", help="follow the run's progress until it ends")
        parser.add_argument("--json", action="store_true", help="print JSON (the estimate, or the run at its end)")

    def handle(self, *args: Any, **options: Any) -> None:
        user = user_named(options["user"])
        try:
            rules = BackfillRules.from_mapping(
                {
                    "window_days": options["days"],
                    "turns_per_session": options["turns_per_session"],
                    "max_turns": options["max_turns"],
                    "include_sidechains": options["include_sidechains"],
                    "include_no_cwd": options["include_no_cwd"],
                    "mappings": options["map"],
                }
            )
        except RulesError as exc:
            raise CommandError(f"bad rule {exc}") from exc
        try:
            read = backfill_read_paths(paths=options["paths"])
            if options["dry_run"]:
                self._estimate(
                    backfill_estimate(user=user, sessions=read.sessions, rules=rules, rejected=read.rejected), options
                )
                return
            run = backfill_start(
                user=user, sessions=read.sessions, rules=rules, files=read.files, rejected=read.rejected
            )
        except AtriumError as exc:
            raise CommandError(exc.message) from exc
        enqueue_backfill_run(run.pk)
        self.stderr.write(f"backfill run #{run.pk} queued: {run.counts['turns_total']} turns ({_skips(run)})")
        if options["wait"]:
            run = self._follow(run)
        if options["json"]:
            self.stdout.write(json.dumps(_run_dict(run), indent=2))
        else:
            self.stdout.write(f"run #{run.pk}: {run.state} {json.dumps(run.counts, ensure_ascii=False)}")
        if run.state == BackfillRun.State.FAILED:
            raise CommandError(f"run #{run.pk} failed: {run.error}")

    def _estimate(self, plan: BackfillEstimate, options: dict[str, Any]) -> None:
        data = plan.as_dict()
        if options["json"]:
            self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False))
            return
        for s in data["per_session"]:
            where = f"skipped: {s['skip_reason']}" if s["skip_reason"] else f"-> {s['palace']['name']}"
            cut = " (cut)" if s["cut"] else ""
            self.stdout.write(f"{s['session'][:44]:<44} {s['client']:<11} {s['turns']:>4} turns{cut} {where}")
            if not s["skip_reason"]:
                self.stdout.write(f"{'':<44}   {s['why']}")
        self.stdout.write(
            f"{data['sessions_kept']} of {data['sessions']} sessions, {data['turns']} turns would run "
            f"({data['turns_left_out']} left out); by palace {json.dumps(data['turns_by_palace'], ensure_ascii=False)}"
        )
        if data["skip_reasons"]:
            self.stdout.write(f"skipped sessions: {json.dumps(data['skip_reasons'])}")
        for rejected in data["files_rejected"]:
            self.stdout.write(f"not read: {rejected['file']}: {rejected['reason']}")
        self.stdout.write(data["method"])

    def _follow(self, run: BackfillRun) -> BackfillRun:
        """Print the progress on each change until the run ends (a run needs a worker: `atrium up` starts one)."""
        shown = None
        while True:
            run.refresh_from_db()
            c = run.counts
            eta = "?" if c.get("eta_seconds") is None else c["eta_seconds"]
            line = (
                f"{run.state}: {c.get('turns_done', 0)}/{c.get('turns_total', 0)} turns, {c.get('memories', 0)} "
                f"memories, {c.get('rate') or '?'} turns/s, ETA {eta} s"
            )
            if line != shown:
                self.stderr.write(line)
                shown = line
            if run.state in ENDED:
                return run
            time.sleep(POLL_S)


def _skips(run: BackfillRun) -> str:
    parts = [f"{n} sessions {why}" for why, n in run.counts.get("sessions_skipped", {}).items()]
    parts += [f"{n} turns {why}" for why, n in run.counts.get("skipped", {}).items()]
    return ", ".join(parts) or "nothing skipped"


def _run_dict(run: BackfillRun) -> dict[str, Any]:
    return {
        "id": run.pk,
        "state": run.state,
        "counts": run.counts,
        "estimate": run.estimate,
        "rules": run.rules,
        "files": run.files,
        "error": run.error,
    }
