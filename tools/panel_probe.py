"""Not part of the suite: server render times of the panel pages at N memories, run by hand through pytest (for the
test database and the suite's personas, imported below):

    uv run pytest tools/panel_probe.py -s -k test_probe    # PROBE_N=10000 PROBE_RUNS=7 PROBE_ONLY=/palace/,/log/
    uv run pytest tools/panel_probe.py -s -k test_profile  # PROBE_URL=/palace/,hx:/log/ PROBE_EXPLAIN=1

It prints timings (and the load average) and asserts nothing about them: speed is measured here, never in tests.
"""

from __future__ import annotations

import os
import statistics
import time
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from memory.models import Edge, Memory
from palace.models import OpLog, Room, Slot, TourStop
from palace.slots import ROOM_NAMES, room_name

# The suite's fixtures (personas, the panel's `personal` palace), as when this file lived in tests/panel/.
pytest_plugins = ["tests.conftest", "tests.panel.conftest"]

N = int(os.environ.get("PROBE_N", "10000"))


def build(palace, n):
    kinds = list(ROOM_NAMES)
    now = timezone.now()
    rooms, slots, stops, memories = {}, [], [], []
    per_kind = dict.fromkeys(kinds, 0)
    for i in range(n):
        kind = kinds[i % 5]
        per_kind[kind] += 1
        ordinal = (per_kind[kind] - 1) // 9 + 1
        key = (kind, ordinal)
        if key not in rooms:
            rooms[key] = Room(palace=palace, kind=kind, name=room_name(kind, ordinal), ordinal=ordinal, capacity=9)
    Room.objects.bulk_create(rooms.values(), batch_size=2000)
    per_kind = dict.fromkeys(kinds, 0)
    for i in range(n):
        kind = kinds[i % 5]
        per_kind[kind] += 1
        ordinal = (per_kind[kind] - 1) // 9 + 1
        slots.append(Slot(palace=palace, room=rooms[(kind, ordinal)], number=(per_kind[kind] - 1) % 9 + 1))
    Slot.objects.bulk_create(slots, batch_size=2000)
    stops = [TourStop(palace=palace, seq=i + 1, slot=s) for i, s in enumerate(slots)]
    TourStop.objects.bulk_create(stops, batch_size=2000)
    for i, slot in enumerate(slots):
        kind = kinds[i % 5]
        memories.append(
            Memory(
                palace=palace,
                kind=kind,
                content=f"memory {i} about topic {i % 97} and service {i % 13}",
                placard=f"topic {i % 97} 2026-{1 + i % 12:02d}",
                slot=slot,
                created_at=now - timedelta(minutes=n - i),
                occurred_at=now - timedelta(minutes=n - i),
                source_session=f"s-{i // 10}" if kind == "episode" else "",
                review_enrolled=i % 3 == 0,
            )
        )
    Memory.objects.bulk_create(memories, batch_size=2000)
    ids = list(Memory.objects.filter(palace=palace).order_by("pk").values_list("pk", flat=True))
    Edge.objects.bulk_create(
        [
            Edge(palace=palace, from_memory_id=ids[i], to_memory_id=ids[i + 7], kind="related")
            for i in range(0, n - 7, 5)
        ],
        batch_size=2000,
    )
    OpLog.objects.bulk_create(
        [
            OpLog(
                op="memory.save",
                actor_kind="system",
                actor_name="probe",
                palace=palace,
                target_kind="memory",
                target_id=pk,
                detail={"kind": "fact"},
            )
            for pk in ids
        ],
        batch_size=2000,
    )


def uninstrument(monkeypatch):
    """The test runner wraps every template render to record it (a signal and a context copy per template); a
    production server does not, so time the pages without it."""
    from django.template.base import Template
    from django.test.utils import _TestState

    monkeypatch.setattr(Template, "_render", _TestState.saved_data.template_render)


def probe_urls(client, palace):
    """Every page and every htmx region of the panel, with ids taken from the built palace."""
    first = client.get("/palace/").content.decode()
    cursor = first.split("after=")[1].split('"')[0]
    route = client.get("/palace/?sort=route").content.decode()
    route_cursor = route.split("after=")[1].split('"')[0]
    log_cursor = client.get("/log/").content.decode().split("before=")[1].split('"')[0]
    episodes_cursor = client.get("/episodes/").content.decode().split("after=")[1].split('"')[0]
    memories = Memory.objects.filter(palace=palace).order_by("pk")
    middle = memories[N // 2]
    episode = memories.filter(kind="episode")[N // 10]
    room = Room.objects.filter(palace=palace).order_by("pk")[N // 20]
    day = timezone.localdate() - timedelta(days=2)
    return [
        ("/today/", False),
        ("/today/?part=rooms", False),
        ("/today/?part=refurb", False),
        ("/today/?part=rooms", True),
        ("/today/?part=tour", True),
        ("/today/?part=refurb", True),
        ("/today/health/", True),
        ("/palace/", False),
        ("/palace/", True),
        (f"/palace/?after={cursor}", True),
        ("/palace/?sort=route", False),
        (f"/palace/?sort=route&after={route_cursor}", True),
        ("/palace/?kind=skill&status=all", True),
        (f"/palace/?room={room.pk}", True),
        ("/palace/?status=forgotten", True),
        ("/palace/?q=topic+42", True),
        ("/palace/?q=topic+42&kind=fact", True),
        ("/palace/?due=1", True),
        (f"/palace/m/{middle.pk}/", False),
        (f"/palace/m/{middle.pk}/", True),
        ("/corridor/", False),
        (f"/corridor/room/{room.pk}/", True),
        (f"/corridor/rooms/?palace={palace.pk}&kind=fact", False),
        (f"/corridor/rooms/?palace={palace.pk}&kind=fact&after=100", True),
        (f"/corridor/m/{middle.pk}/neighbours/?hops=1", True),
        (f"/corridor/m/{middle.pk}/neighbours/?hops=3", True),
        ("/corridor/bench/?q=service+7", True),
        ("/log/", False),
        (f"/log/?before={log_cursor}", True),
        ("/log/?category=writes", True),
        ("/log/?category=organize", True),
        ("/episodes/", False),
        (f"/episodes/?after={episodes_cursor}", True),
        (f"/episodes/?start={day.isoformat()}&end={day.isoformat()}", True),
        (f"/episodes/{episode.pk}/nearby/", True),
    ]


def forget_parts(cache):
    """Drop the Today regions' cached figures (the local-memory cache of the test run), keep the health report."""
    for key in [k for k in cache._cache if ":panel:" in k and "health" not in k]:
        cache._cache.pop(key, None)
        cache._expire_info.pop(key, None)


def write_op(palace):
    """A write as the services make one (an op row in a transaction): every cached Today region of the palace is
    stale after it, so the next render is the cold one a user sees after saving a memory."""
    from django.db import transaction

    from palace.actors import Actor
    from palace.oplog import oplog_write

    with transaction.atomic():
        oplog_write(op="memory.report", actor=Actor.for_system("probe"), palace=palace, target_kind="memory")


def cached(url):
    return "part=" in url


def timed(client, url, headers, runs, before=None):
    times, cpu = [], []
    for _ in range(runs):
        if before is not None:
            before()
        started, started_cpu = time.perf_counter(), time.process_time()
        response = client.get(url, **headers)
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        assert response.status_code == 200, url
    return times, cpu


def test_probe(alice, client_for, personal, settings, monkeypatch):
    """Median and max server time of each page and region over RUNS renders (after one warm-up render). The
    Today regions that cache their figures until the palace's next write are timed cold (an op row written
    before every render: the first view after a write) and warm; health is timed as a server runs it (in the
    background). PROBE_ONLY: comma-separated substrings, to time only the URLs containing one of them."""
    from panel import health

    uninstrument(monkeypatch)
    monkeypatch.setattr(health, "MEASURE_IN_BACKGROUND", True)
    build(personal, N)
    with connection.cursor() as cur:
        cur.execute("ANALYZE")
    client = client_for(alice)
    runs = int(os.environ.get("PROBE_RUNS", "7"))
    only = [o for o in os.environ.get("PROBE_ONLY", "").split(",") if o]
    print()
    for url, htmx in probe_urls(client, personal):
        if only and not any(o in url for o in only):
            continue
        headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
        assert client.get(url, **headers).status_code == 200, url
        variants = [("cold", lambda: write_op(personal)), ("warm", None)] if cached(url) else [("", None)]
        for name, before in variants:
            times, cpu = timed(client, url, headers, runs, before)
            print(
                f"{N} memories  {'htmx' if htmx else 'page'} {url:40s} {name:4s} median {statistics.median(times):7.1f}"
                f" ms  max {max(times):7.1f} ms  (python cpu median {statistics.median(cpu):6.1f} ms)"
            )
    print("load average", " ".join(f"{x:.2f}" for x in os.getloadavg()))


def test_profile(alice, client_for, personal, monkeypatch):
    """PROBE_URL: comma-separated URLs (prefix "hx:" for an htmx request) to profile, with their queries."""
    uninstrument(monkeypatch)
    import cProfile
    import pstats

    from django.test.utils import CaptureQueriesContext

    build(personal, N)
    with connection.cursor() as cur:
        cur.execute("ANALYZE")
    client = client_for(alice)
    from django.core.cache import cache

    for url in os.environ.get("PROBE_URL", "/palace/").split(","):
        headers = {"HTTP_HX_REQUEST": "true"} if url.startswith("hx:") else {}
        url = url.removeprefix("hx:")
        client.get(url, **headers)
        forget_parts(cache)
        with CaptureQueriesContext(connection) as ctx:
            client.get(url, **headers)
        print(f"==== {url}: {len(ctx.captured_queries)} queries")
        for q in ctx.captured_queries:
            print(q["time"], q["sql"][:400])
            if os.environ.get("PROBE_EXPLAIN") and float(q["time"]) >= 0.004:
                with connection.cursor() as cur:
                    cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + q["sql"])
                    print("\n".join(r[0] for r in cur.fetchall()))
        forget_parts(cache)
        prof = cProfile.Profile()
        prof.enable()
        client.get(url, **headers)
        prof.disable()
        pstats.Stats(prof).sort_stats(os.environ.get("PROBE_SORT", "cumulative")).print_stats(40)
