"""`atrium bench ingest --turns N`: backfill throughput against the physical limit, the embedder.

1. Synthetic sessions of a coding agent (user requests, decisions, preferences, "remember that", corrections,
   assistant answers and tool calls; English and some Chinese; names and numbers drawn at random so turns differ)
   with N work turns (user + assistant; tool turns ride along and are skipped as a real transcript's are).
2. They go through the backfill path in this process, synchronously (no broker): `backfill_start` (routing, storing
   the turns) and `backfill_run_process` (extraction, batched saves through the whole write pipeline, per-turn
   state, op rows, session summaries). The embedder is wrapped to record every call's texts and time.
3. In the same run, the embedder alone embeds exactly those texts again, in the same calls: what embedding alone
   allows (`limit_turns_per_second`). `share_of_limit` = turns_per_second / limit_turns_per_second; the goal is
   at least 0.75. On a shared machine the load can change between the run and that pass; `share_in_run` (the time
   the run spent embedding over its whole time) is the same ratio measured inside the run, and does not move
   with it.

Everything runs in one transaction that is rolled back at the end (the bench user, its palace, the run, memories
and op rows), so the database is left as it was; the final COMMIT is therefore not timed (one per batch in a real
run, a few milliseconds each).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction

from capture.backfill import backfill_run_process, backfill_start
from capture.importers import BackfillRules, Session
from memory.providers import embedder_model_name, get_embedder, set_embedder
from palace.actors import Actor
from palace.services import user_create

GOAL = 0.75
WORK_TURNS_PER_SESSION = 10  # 5 user + 5 assistant, and a tool call after most user turns

_PEOPLE = ("Mara", "Jonas", "Priya", "Tomasz", "Aiko", "Lena", "Omar", "Sven", "Chen Wei", "Ines")
_SERVICES = ("billing", "search", "auth", "ingest", "gateway", "reports", "notifier", "scheduler", "ledger", "export")
_TOOLS = ("Read", "Edit", "Bash", "Grep", "Write", "mcp__atrium__memory_search", "Task")
_USER = (
    "We decided to move the {s} service to PostgreSQL {n} because the old MySQL replica kept lagging behind.",
    "I prefer small pull requests for the {s} service, at most {n} changed files, so {p} can review them the same day.",
    "Remember that the {s} staging database listens on port {port} and {p} owns its credentials.",
    "From now on, always run the {s} integration tests with --maxfail={n} before pushing.",
    "Actually, no: the {s} deploy window is Thursday at {n}:00, not Tuesday.",
    "Can you look at why the {s} worker retries {n} times before giving up? The logs from {p} show timeouts.",
    "Please rename the {s} settings module and keep the old name as an alias for {n} releases.",
    "以后 {s} 服务的提交信息都用英文写，{p} 会检查。",
    "记住：{s} 的测试数据库端口是 {port}。",
    "The flaky test in {s} fails about once in {n} runs; {p} thinks it is the clock, not the network.",
)
_ASSISTANT = (
    "I updated the {s} configuration and ran the tests: {n} passed. The change is in config/{s}.py.",
    "The retries come from the client's default policy; I set it to {n} attempts with jitter in the {s} adapter.",
    "Done. The {s} migration adds an index on (account_id, created_at); it took {n} ms on the sample data.",
    "I found {n} call sites of the old {s} helper and replaced them; {p}'s branch touches two of them.",
    "The {s} build now caches dependencies; a clean run went from {port} s to {n} s.",
)


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        s=rng.choice(_SERVICES), p=rng.choice(_PEOPLE), n=rng.randint(2, 99), port=rng.randint(1024, 65000)
    )


def synthetic_sessions(*, turns: int, seed: int = 25, now: datetime | None = None) -> list[Session]:
    """Sessions holding `turns` work turns in all (the last one may be shorter), within the last day."""
    rng = random.Random(seed)
    now = now or datetime.now(tz=UTC)
    sessions: list[Session] = []
    left = turns
    while left > 0:
        n = min(WORK_TURNS_PER_SESSION, left)
        left -= n
        start = now - timedelta(hours=rng.uniform(1, 20))
        session = Session(
            session_id=f"bench-{seed}-{len(sessions):05d}",
            client="claude-code",
            cwd=f"/home/bench/src/{rng.choice(_SERVICES)}",
            is_sidechain=False,
            started_at=None,
            ended_at=None,
            source_name="bench",
        )
        for i in range(n):
            at = start + timedelta(minutes=2 * i)
            if i % 2 == 0:
                session.add("user", _fill(rng.choice(_USER), rng), at=at)
                if rng.random() < 0.8:
                    session.add("tool", "", tool=rng.choice(_TOOLS), at=at)
            else:
                session.add("assistant", _fill(rng.choice(_ASSISTANT), rng), at=at)
        sessions.append(session)
    return sessions


@dataclass
class _Recording:
    """The process's embedder, recording each call's texts and the time it took."""

    inner: Any
    calls: list[list[str]] = field(default_factory=list)
    seconds: float = 0.0
    name: str = ""

    def __post_init__(self) -> None:
        self.name = str(self.inner.name)

    def passages(self, texts: list[str]) -> np.ndarray:
        began = time.perf_counter()
        try:
            return self.inner.passages(texts)
        finally:
            self.seconds += time.perf_counter() - began
            self.calls.append(list(texts))

    def query(self, text: str) -> np.ndarray:
        return self.inner.query(text)


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{max(minutes, 1)} min"


def run_ingest_bench(*, turns: int, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The bench (module docstring); returns its figures."""
    say = progress or (lambda _line: None)
    inner = get_embedder()
    if inner is None:
        raise RuntimeError("embeddings are switched off (ATRIUM_EMBEDDER=off): there is no limit to measure against")
    inner.passages(["warm-up: load the model before anything is timed"])
    sessions = synthetic_sessions(turns=turns)
    recording = _Recording(inner)
    load_before = os.getloadavg()
    set_embedder(recording)
    try:
        with transaction.atomic():
            user = user_create(username=f"bench-ingest-{os.getpid()}", actor=Actor.for_system("bench ingest"))
            say(f"backfilling {turns} turns in {len(sessions)} sessions ...")
            began = time.perf_counter()
            run = backfill_start(
                user=user,
                sessions=sessions,
                rules=BackfillRules(window_days=0, turns_per_session=WORK_TURNS_PER_SESSION, max_turns=turns),
                files=["bench"],
                use_git=False,
            )
            result = backfill_run_process(run_id=run.pk)
            backfill_seconds = time.perf_counter() - began
            run.refresh_from_db()
            counts = dict(run.counts)
            transaction.set_rollback(True)  # leave nothing behind
    finally:
        set_embedder(None, active=False)
    say(f"embedding the same {sum(map(len, recording.calls))} texts alone ...")
    began = time.perf_counter()
    for texts in recording.calls:
        inner.passages(texts)
    limit_seconds = time.perf_counter() - began
    embedded = sum(len(c) for c in recording.calls)
    rate = turns / backfill_seconds
    limit = turns / limit_seconds if limit_seconds > 0 else float("inf")
    share = rate / limit if limit != float("inf") else 1.0
    return {
        "turns": turns,
        "sessions": len(sessions),
        "state": result.state,
        "turns_done": counts.get("turns_done"),
        "memories": counts.get("memories"),
        "skipped": counts.get("skipped", {}),
        "seconds": round(backfill_seconds, 3),
        "turns_per_second": round(rate, 3),
        "texts_embedded": embedded,
        "texts_per_turn": round(embedded / turns, 3),
        "embed_calls": len(recording.calls),
        "embed_seconds_in_run": round(recording.seconds, 3),
        "limit_seconds": round(limit_seconds, 3),
        "limit_turns_per_second": round(limit, 3),
        "share_of_limit": round(share, 3),
        # The same ratio inside the run (the time the run spent embedding over its whole time): immune to the
        # machine's load changing between the run and the embedder-alone pass, which moves share_of_limit.
        "share_in_run": round(recording.seconds / backfill_seconds, 3),
        "goal_share_of_limit": GOAL,
        "ten_thousand_turns_seconds": round(10_000 / rate),
        "ten_thousand_turns": f"10,000 turns take about {_duration(10_000 / rate)} at this rate",
        "batch_turns": settings.ATRIUM_BACKFILL_BATCH_TURNS,
        "embedder": embedder_model_name(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "method": "the backfill service in process (no broker), then the embedder alone over the same calls",
    }
