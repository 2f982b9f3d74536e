"""`atrium bench ledger --people N --days D`: how the ledgers grow with a team's traffic, and what reading them costs.

The traffic model, per person per working day (5 days of 7, Monday to Friday, between 08:00 and 18:00 UTC):

- 40 captured turns: `capture.turn` op rows (detail as capture/processing.py writes it), 70 % in the person's own
  palace, 30 % in one of their projects;
- 15 saves: a memory row (no vector: the ledgers are measured, not search) and its `memory.save` op row, 60 % in the
  personal palace, 40 % in one of the person's three projects;
- 2 corrections of that day's saves: a new memory superseding the old one (the old one's status `superseded`) and a
  `memory.update` op row;
- 10 review grades of the person's memories so far: `review.grade` op rows;
- 60 searches with 10 hits each: 600 access records (via `search`), a tenth of them on one "hot" memory per person,
  the rest spread over the person's memories so far;
- 1 ruling: a `memory_adjudication` row (the rules path, verdict accept) on one of that day's saves.

Evidence batches are bounded at write (memory.search BATCH_KEEP, the newest 20 per person), so a year holds what a
day holds: the newest 20 per person are loaded. 50 people over 365 days: ~0.87 M op rows, ~7.8 M access records,
~0.22 M memories, ~13,000 rulings, 1,000 batches.

People are bench users, each with a personal palace and member of three of max(3, N/5) project palaces. Users and
palaces are created directly; the rows are generated with numpy, one person at a time, and loaded with COPY into a
temporary table then INSERT … SELECT (row-level security refuses COPY into the tables), acting as the system. Op rows
are inserted in time order, so their ids grow with created_at as real ones do.

Measured, ~30 repetitions each (p50/p95/p99 ms): the Log page's selector (palace.selectors.oplog_page as one person:
first page, a category, an op prefix, a page deep in the past via `before`), the audit console's changelist
(GET /admin/palace/oplog/ as a superuser, plain and filtered), a memory's history (memory.audit.memory_history of the
hot memory); and `access_records_prune` with 180 days once, inside a transaction rolled back afterwards (so real rows
of an installation that keeps them for ever are never touched). Then every bench row is removed (the op log's
append-only trigger is disabled for that DELETE only, in the same transaction).
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test import Client
from django.test.utils import override_settings

from memory.audit import memory_history
from memory.jobs import access_records_prune
from ops.bench.measures import percentiles
from palace.models import Membership, OpLog, Palace
from palace.oplog import oplog_partitions_ensure
from palace.rls import acting_as, acting_as_system
from palace.selectors import oplog_page
from palace.sequences import sequence_ids

TURNS, SAVES, CORRECTIONS, GRADES, SEARCHES, HITS, RULINGS = 40, 15, 2, 10, 60, 10, 1
BATCHES_KEPT = 20  # memory.search BATCH_KEEP
TRAFFIC = {"capture_turns": TURNS, "saves": SAVES, "corrections": CORRECTIONS, "review_grades": GRADES,
           "searches": SEARCHES, "hits_per_search": HITS, "rulings": RULINGS,
           "evidence_batches_kept": BATCHES_KEPT}  # fmt: skip
HOT_SHARE = 0.1
PROJECTS_EACH = 3
TABLES = ("palace_oplog", "memory_accessrecord", "memory_searchbatch", "memory_adjudication", "memory_memory")
NULL = "\\N"  # COPY text format
SYSTEM = "bench ledger: load, measure and remove synthetic rows"

_OP_COLUMNS = (
    "id, op, actor_kind, actor_user_id, actor_token_label, actor_name, palace_id, target_kind, target_id, reason, "
    "detail, request_id, created_at"
)
_MEMORY_COLUMNS = (
    "id, palace_id, kind, content, placard, status, confidence, importance, hit_count, occurred_at, created_at, "
    "updated_at, version, supersedes_id, source_kind, source_session, source_turn, sources, speaker, created_by_id, "
    "redactions, epitaph, search_text, embedding_model, meta, review_enrolled"
)
_ACCESS_COLUMNS = "memory_id, user_id, batch, rank, via, created_at"
_RULING_COLUMNS = (
    "palace_id, created_at, verdict, contradiction, similarity, model_took_part, model_name, elapsed_ms, "
    "fallback_reason, reason, new_memory_id, neighbour_id, new_text"
)
_BATCH_COLUMNS = "handle, user_id, query, refs, palace_ids, created_at, assessed"
_KINDS = np.array(["fact", "decision", "preference", "episode", "skill"])
_WORDS = np.array(
    [
        "deploy",
        "release",
        "index",
        "migration",
        "backup",
        "budget",
        "invoice",
        "review",
        "outage",
        "latency",
        "queue",
        "sprint",
        "roadmap",
        "client",
        "postgres",
        "redis",
        "docker",
        "pipeline",
        "cache",
        "token",
        "audit",
        "policy",
        "meeting",
        "customer",
        "design",
    ]
)


@dataclass
class Person:
    user: Any
    personal: Palace
    projects: list[Palace]
    hot_memory: int = 0


@dataclass
class Bench:
    people: list[Person] = field(default_factory=list)
    projects: list[Palace] = field(default_factory=list)
    staff: Any = None
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))


def working_days(*, days: int, now: datetime) -> np.ndarray:
    """Midnights (UTC, as datetime64[s]) of the Monday-to-Friday days among the `days` days before today."""
    today = np.datetime64(now.date(), "D")
    back = today - np.arange(days, 0, -1)  # oldest first, yesterday last: every moment is in the past
    weekday = (back.astype("int64") + 3) % 7  # 1970-01-01 was a Thursday (3)
    return back[weekday < 5].astype("datetime64[s]")


def _moments(rng: np.random.Generator, midnights: np.ndarray, per_day: int) -> np.ndarray:
    """`per_day` moments in each working day's 08:00-18:00, shape (days, per_day), sorted within a day."""
    seconds = np.sort(rng.integers(8 * 3600, 18 * 3600, size=(len(midnights), per_day)), axis=1)
    return midnights[:, None] + seconds.astype("timedelta64[s]")


def _iso(moments: np.ndarray) -> list[str]:
    return [f"{s}+00" for s in np.datetime_as_string(moments.ravel(), unit="s")]


def _copy(table: str, columns: str, lines: Iterable[str], *, order: str = "") -> int:
    """COPY tab-separated lines into a temporary twin of `table`, then INSERT … SELECT them (row-level security
    refuses COPY into the table itself). Returns the rows inserted."""
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS bench_ledger_load")
        cursor.execute(f"CREATE TEMP TABLE bench_ledger_load AS SELECT {columns} FROM {table} WITH NO DATA")  # noqa: S608
        with cursor.cursor.copy(f"COPY bench_ledger_load ({columns}) FROM STDIN") as copy:
            for chunk in _chunks(lines):
                copy.write(chunk)
        cursor.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM bench_ledger_load {order}")  # noqa: S608
        count = cursor.rowcount
        cursor.execute("DROP TABLE bench_ledger_load")
    return int(count)


def _chunks(lines: Iterable[str], size: int = 20_000) -> Iterable[str]:
    buffer: list[str] = []
    for line in lines:
        buffer.append(line)
        if len(buffer) >= size:
            yield "\n".join(buffer) + "\n"
            buffer = []
    if buffer:
        yield "\n".join(buffer) + "\n"


def _reserve_ids(table: str, count: int) -> np.ndarray:
    return np.array(sequence_ids(table, count), dtype=np.int64)


def _setup(bench: Bench, *, people: int, tag: str) -> None:
    """Fills `bench` as it goes, so a failure half-way still leaves the cleanup everything made so far."""
    users = get_user_model()
    bench.staff = users.objects.create(username=f"{tag}-staff", is_staff=True, is_superuser=True)
    for i in range(max(PROJECTS_EACH, people // 5)):
        bench.projects.append(
            Palace.objects.create(kind=Palace.Kind.PROJECT, name=f"{tag} project {i}", origin_key=f"{tag}/project-{i}")
        )
    for i in range(people):
        user = users.objects.create(username=f"{tag}-{i}")
        personal = Palace.objects.create(kind=Palace.Kind.PERSONAL, name=f"{tag}-{i}'s palace", personal_owner=user)
        Membership.objects.create(palace=personal, user=user, role=Membership.Role.OWNER)
        projects = [bench.projects[(i + j) % len(bench.projects)] for j in range(PROJECTS_EACH)]
        for project in projects:
            Membership.objects.create(palace=project, user=user, role=Membership.Role.EDITOR)
        bench.people.append(Person(user=user, personal=personal, projects=projects))


def _pick_palaces(rng: np.random.Generator, person: Person, shape: tuple[int, ...], own: float) -> np.ndarray:
    ids = np.array([person.personal.pk] + [p.pk for p in person.projects], dtype=np.int64)
    choice = np.where(rng.random(shape) < own, 0, rng.integers(1, len(ids), size=shape))
    return ids[choice]


def _load_person(rng: np.random.Generator, person: Person, midnights: np.ndarray, bench: Bench) -> None:
    """One person's year: memories, op rows, access records, rulings and evidence batches."""
    w = len(midnights)
    uid, name = person.user.pk, person.user.username
    # Memories: the day's saves, then the day's corrections (new versions of two saves).
    save_at = _moments(rng, midnights, SAVES)
    save_palace = _pick_palaces(rng, person, (w, SAVES), 0.6)
    save_ids = _reserve_ids("memory_memory", w * SAVES).reshape(w, SAVES)
    corrected = np.argsort(rng.random((w, SAVES)), axis=1)[:, :CORRECTIONS]
    old_ids = np.take_along_axis(save_ids, corrected, axis=1)
    fix_palace = np.take_along_axis(save_palace, corrected, axis=1)
    fix_at = np.take_along_axis(save_at, corrected, axis=1) + rng.integers(300, 3600, size=(w, CORRECTIONS)).astype(
        "timedelta64[s]"
    )
    fix_ids = _reserve_ids("memory_memory", w * CORRECTIONS).reshape(w, CORRECTIONS)
    superseded = set(old_ids.ravel().tolist())
    kinds = _KINDS[rng.integers(0, len(_KINDS), size=w * SAVES)]
    words = _WORDS[rng.integers(0, len(_WORDS), size=(w * SAVES, 3))]

    def memory_lines() -> Iterable[str]:
        at = _iso(save_at)
        for i, (mid, pid) in enumerate(zip(save_ids.ravel().tolist(), save_palace.ravel().tolist(), strict=True)):
            text = f"Remember that the {' '.join(words[i])} note {mid} stands."
            status = "superseded" if mid in superseded else "active"
            yield (
                f"{mid}\t{pid}\t{kinds[i]}\t{text}\t\t{status}\t0.7\t0.5\t0\t{at[i]}\t{at[i]}\t{at[i]}\t1\t\\N\trest"
                f"\t\t\t[]\t\t{uid}\t[]\t\t{text}\t\t{{}}\tf"
            )
        fixed_at = _iso(fix_at)
        for i, (mid, old, pid) in enumerate(
            zip(fix_ids.ravel().tolist(), old_ids.ravel().tolist(), fix_palace.ravel().tolist(), strict=True)
        ):
            text = f"Correction: note {old} now reads differently ({mid})."
            yield (
                f"{mid}\t{pid}\tfact\t{text}\t\tactive\t0.7\t0.5\t0\t{fixed_at[i]}\t{fixed_at[i]}\t{fixed_at[i]}\t2"
                f"\t{old}\trest\t\t\t[]\t\t{uid}\t[]\t\t{text}\t\t{{}}\tf"
            )

    bench.rows["memory_memory"] += _copy("memory_memory", _MEMORY_COLUMNS, memory_lines())
    person.hot_memory = int(save_ids[0, 0])
    # Memories known on each day: a person's saves up to and including it (their flat index is day * SAVES + k).
    flat = save_ids.ravel()
    known = (np.arange(1, w + 1) * SAVES)[:, None]

    def among_known(per_day: int) -> np.ndarray:
        return flat[(rng.random((w, per_day)) * known).astype(np.int64)]

    palace_of = dict(zip(flat.tolist(), save_palace.ravel().tolist(), strict=True))
    # Op rows, every kind at once, then sorted by time so ids follow created_at.
    turn_at = _moments(rng, midnights, TURNS)
    turn_palace = _pick_palaces(rng, person, (w, TURNS), 0.7)
    graded = among_known(GRADES)
    grade_at = _moments(rng, midnights, GRADES)
    grades = rng.integers(2, 6, size=(w, GRADES))
    disposition = np.where(rng.random((w, SAVES)) < 0.9, "accept", "defer")
    # (at, op, palace, target kind, target id, reason, detail)
    ops: list[tuple[str, str, int, str, int | None, str, str]] = []
    for i, (at, pid) in enumerate(zip(_iso(turn_at), turn_palace.ravel().tolist(), strict=True)):
        session = f"bench-{uid}-{i // TURNS}"
        role = "user" if i % 2 == 0 else "assistant"
        state = "done" if role == "user" else "skipped"
        detail = {"session": session, "turn": i % TURNS, "role": role, "state": state, "method": "rules",
                  "fallback": "", "memories": [], "source": "claude-code"}  # fmt: skip
        ops.append((at, "capture.turn", pid, "capture_turn", None, "", json.dumps(detail)))  # no CaptureTurn rows
    for at, mid, pid, kind, disp in zip(
        _iso(save_at), flat.tolist(), save_palace.ravel().tolist(), kinds.tolist(), disposition.ravel().tolist(),
        strict=True,
    ):  # fmt: skip
        detail = {"disposition": disp, "kind": kind, "source": "rest", "slot": None, "redactions": [],
                  "contradicts": [], "edges": [], "judged_by": ["rules"], "degraded": True, "importance": 0.5,
                  "entities": {}}  # fmt: skip
        ops.append((at, "memory.save", pid, "memory", mid, "", json.dumps(detail)))
    for at, new, old, pid in zip(
        _iso(fix_at), fix_ids.ravel().tolist(), old_ids.ravel().tolist(), fix_palace.ravel().tolist(), strict=True
    ):
        detail = {"supersedes": old, "from_version": 1, "version": 2, "redactions": [], "degraded": True,
                  "slot": None, "closed_edges": [], "entities": {}}  # fmt: skip
        ops.append((at, "memory.update", pid, "memory", new, "a correction", json.dumps(detail)))
    for at, mid, grade in zip(_iso(grade_at), graded.ravel().tolist(), grades.ravel().tolist(), strict=True):
        detail = {"grade": grade, "days_overdue": 0, "repetitions": 1, "interval_days": 1, "ease": 2.5,
                  "due_at": at.replace(" ", "T")}  # fmt: skip
        ops.append((at, "review.grade", palace_of[mid], "memory", mid, "", json.dumps(detail)))
    ops.sort()
    ids = _reserve_ids("palace_oplog", len(ops)).tolist()
    op_lines = (
        f"{oid}\t{op}\tuser\t{uid}\t\t{name}\t{pid}\t{kind}\t{NULL if target is None else target}\t{reason}"
        f"\t{detail}\t\t{at}"
        for oid, (at, op, pid, kind, target, reason, detail) in zip(ids, ops, strict=True)
    )
    bench.rows["palace_oplog"] += _copy("palace_oplog", _OP_COLUMNS, op_lines)
    # Access records: 60 searches a day, 10 hits each; a tenth of the hits on the hot memory.
    search_at = np.repeat(_moments(rng, midnights, SEARCHES), HITS, axis=1)
    hits = among_known(SEARCHES * HITS)
    hits[rng.random(hits.shape) < HOT_SHARE] = person.hot_memory
    ranks = np.tile(np.arange(1, HITS + 1), SEARCHES)
    handles = [f"b_{secrets.token_urlsafe(12)}" for _ in range(w * SEARCHES)]
    access_lines = (
        f"{mid}\t{uid}\t{handles[i // HITS]}\t{ranks[i % (SEARCHES * HITS)]}\tsearch\t{at}"
        for i, (mid, at) in enumerate(zip(hits.ravel().tolist(), _iso(search_at), strict=True))
    )
    bench.rows["memory_accessrecord"] += _copy("memory_accessrecord", _ACCESS_COLUMNS, access_lines)
    # Rulings: one a day, on one of the day's saves against an earlier memory.
    ruled = rng.integers(0, SAVES, size=w)
    neighbours = among_known(RULINGS).ravel()
    ruling_lines = (
        f"{palace_of[int(save_ids[d, k])]}\t{at}\taccept\tf\t0.81\tf\t\t0\tno model configured"
        f"\tclose but different: both kept\t{save_ids[d, k]}\t{neighbours[d]}\tRemember that note {save_ids[d, k]}."
        for d, (k, at) in enumerate(zip(ruled.tolist(), _iso(np.take_along_axis(save_at, ruled[:, None], 1)),
                                        strict=True))
    )  # fmt: skip
    bench.rows["memory_adjudication"] += _copy("memory_adjudication", _RULING_COLUMNS, ruling_lines)
    # Evidence batches: the newest BATCHES_KEPT searches' (memory.search prunes older ones at write).
    palaces = json.dumps([person.personal.pk] + [p.pk for p in person.projects])
    newest = _iso(search_at[-1, ::HITS])[-BATCHES_KEPT:]
    batch_lines = (
        f"{handles[-1 - j]}\t{uid}\twhat did we say about the release\t"
        f"{json.dumps({f'r{r}': int(m) for r, m in enumerate(hits[-1, -HITS * (j + 1) :][:HITS])})}\t{palaces}\t{at}\tf"
        for j, at in enumerate(reversed(newest))
    )
    bench.rows["memory_searchbatch"] += _copy("memory_searchbatch", _BATCH_COLUMNS, batch_lines)


def _timed(repeat: int, call: Callable[[], Any]) -> dict[str, float | int | None]:
    call()  # warm-up: the first call pays for cold caches and imports, the steady state is what is reported
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


def _sizes() -> dict[str, int]:
    """Each table's heap, TOAST and indexes; a partitioned one (the op log) summed over its partitions."""
    query = (
        "SELECT CASE WHEN relkind = 'p' THEN (SELECT coalesce(sum(pg_total_relation_size(relid)), 0)"
        " FROM pg_partition_tree(%s::regclass)) ELSE pg_total_relation_size(oid) END FROM pg_class"
        " WHERE oid = %s::regclass"
    )
    with connection.cursor() as cursor:
        return {table: int(cursor.execute(query, [table, table]).fetchone()[0]) for table in TABLES}


def _measure(bench: Bench, repeat: int) -> dict[str, Any]:
    person = bench.people[0]
    with acting_as_system(SYSTEM):
        # The 100th oldest row of the person's palace: the page before it reaches back to the first days.
        oldest = OpLog.objects.filter(palace_id=person.personal.pk).order_by("id").values_list("id", flat=True)
        deep = list(oldest[:100])[-1]
    figures: dict[str, Any] = {}
    with acting_as(person.user):
        pages: dict[str, dict[str, Any]] = {
            "log_first_page_ms": {},
            "log_category_ms": {"category": "retrieval"},
            "log_op_prefix_ms": {"op": "memory."},
            "log_deep_page_ms": {"before": deep},
        }
        for name, kwargs in pages.items():
            figures[name] = _timed(repeat, functools.partial(oplog_page, user=person.user, limit=50, **kwargs))
    client = Client()
    client.force_login(bench.staff)
    with override_settings(ALLOWED_HOSTS=["testserver"]):
        for name, url in {
            "console_ms": "/admin/palace/oplog/",
            "console_filtered_ms": f"/admin/palace/oplog/?class=review&palace={person.personal.pk}",
        }.items():
            status = client.get(url).status_code
            if status != 200:
                raise RuntimeError(f"the audit console answered {status} for {url}")
            figures[name] = _timed(repeat, functools.partial(client.get, url))
    with acting_as_system(SYSTEM):
        figures["history_ms"] = _timed(repeat, lambda: memory_history(memory_id=person.hot_memory))
        figures["history_access_records"] = _access_count(person.hot_memory)
        try:
            with transaction.atomic():
                started = time.perf_counter()
                pruned = access_records_prune(keep_days=180)
                seconds = time.perf_counter() - started
                raise _Rollback
        except _Rollback:
            pass
    figures["prune"] = {"keep_days": 180, "seconds": round(seconds, 2), "deleted": pruned.deleted,
                        "how": "once, inside a transaction rolled back afterwards"}  # fmt: skip
    return figures


def _access_count(memory_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memory_accessrecord WHERE memory_id = %s", [memory_id])
        return int(cursor.fetchone()[0])


class _Rollback(Exception):
    pass


def _cleanup(bench: Bench) -> None:
    """Every bench row, in one transaction: the op log's append-only trigger is off only inside it."""
    users = [p.user.pk for p in bench.people] + ([bench.staff.pk] if bench.staff else [])
    palaces = [p.personal.pk for p in bench.people] + [p.pk for p in bench.projects]
    with acting_as_system(SYSTEM), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM memory_accessrecord WHERE user_id = ANY(%s)", [users])
        cursor.execute("DELETE FROM memory_searchbatch WHERE user_id = ANY(%s)", [users])
        cursor.execute("DELETE FROM memory_adjudication WHERE palace_id = ANY(%s)", [palaces])
        # ALTER TABLE is refused while this transaction has deferred foreign-key checks pending: run them first.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE palace_oplog DISABLE TRIGGER palace_oplog_no_update_delete")
        cursor.execute(
            "DELETE FROM palace_oplog WHERE palace_id = ANY(%s) OR actor_user_id = ANY(%s)", [palaces, users]
        )
        cursor.execute("ALTER TABLE palace_oplog ENABLE TRIGGER palace_oplog_no_update_delete")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        cursor.execute("DELETE FROM memory_memory WHERE palace_id = ANY(%s)", [palaces])
        Membership.objects.filter(palace_id__in=palaces).delete()
        Palace.objects.filter(pk__in=palaces).delete()
        get_user_model().objects.filter(pk__in=users).delete()


def run_ledger_bench(
    *, people: int, days: int, repeat: int = 30, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    say = progress or (lambda _line: None)
    load_before = [round(x, 2) for x in os.getloadavg()]
    now = datetime.now(UTC)
    midnights = working_days(days=days, now=now)
    rng = np.random.default_rng(29)
    tag = f"bench-ledger-{int(time.time())}-{secrets.token_hex(2)}"
    bench = Bench()
    try:
        with acting_as_system(SYSTEM):
            _setup(bench, people=people, tag=tag)
            # The op rows of each past month go to that month's partition, as a year of real traffic would (the
            # partitions stay after the bench, empty again: a few kilobytes each).
            partitions = oplog_partitions_ensure(since=midnights[0].astype(datetime).date() if len(midnights) else None)
            before = _sizes()
            started = time.perf_counter()
            for i, person in enumerate(bench.people):
                say(f"loading person {i + 1}/{people} ({len(midnights)} working days)")
                _load_person(rng, person, midnights, bench)
            load_seconds = time.perf_counter() - started
            maintenance = "ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)"
            say(f"{maintenance} of the five tables")
            with connection.cursor() as cursor:
                for table in TABLES:
                    cursor.execute(f"{maintenance} {table}")
            after = _sizes()
        say(f"measuring ({repeat} repetitions each)")
        figures = _measure(bench, repeat)
    finally:
        say("removing the bench rows")
        _cleanup(bench)
    return {
        "people": people,
        "days": days,
        "working_days": len(midnights),
        "projects": len(bench.projects),
        "traffic_per_person_per_working_day": TRAFFIC,
        "rows": bench.rows,
        "oplog_partitions": {
            "months": len(partitions),
            "held_in_default": sorted(month for month, answer in partitions.items() if answer == "held"),
        },
        "table_bytes": after,
        "table_bytes_before": before,
        "load_seconds": round(load_seconds, 1),
        "maintenance": maintenance,
        "repetitions": repeat,
        **figures,
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "measured_at": now.isoformat(timespec="seconds"),
    }
