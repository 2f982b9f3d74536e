"""Not part of the suite: server render times of the panel pages at N memories (run explicitly)."""

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


def test_probe(alice, client_for, personal, settings, monkeypatch):
    uninstrument(monkeypatch)
    build(personal, N)
    with connection.cursor() as cur:
        cur.execute("ANALYZE")
    client = client_for(alice)
    first = client.get("/palace/").content.decode()
    cursor = first.split("after=")[1].split('"')[0]
    urls = [
        "/today/",
        "/today/?part=rooms",
        "/today/?part=tour",
        "/today/?part=refurb",
        "/palace/",
        "/palace/?sort=route",
        f"/palace/?after={cursor}",
        "/palace/?kind=skill&status=all",
        "/palace/?q=topic+42",
        "/palace/?due=1",
        "/corridor/",
        "/log/",
        "/log/?category=organize",
        "/episodes/",
    ]
    print()
    for url in urls:
        times, cpu = [], []
        for _ in range(7):
            started, started_cpu = time.perf_counter(), time.process_time()
            response = client.get(url, HTTP_HX_REQUEST="true" if "part=" in url else "")
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
            assert response.status_code == 200, url
        print(
            f"{N} memories  {url:40s} wall median {statistics.median(times):7.1f} ms  min {min(times):7.1f} ms"
            f"  python cpu median {statistics.median(cpu):6.1f} ms"
        )


def test_profile(alice, client_for, personal, monkeypatch):
    uninstrument(monkeypatch)
    import cProfile
    import pstats

    from django.test.utils import CaptureQueriesContext

    build(personal, N)
    with connection.cursor() as cur:
        cur.execute("ANALYZE")
    client = client_for(alice)
    url = os.environ.get("PROBE_URL", "/palace/")
    client.get(url)
    with CaptureQueriesContext(connection) as ctx:
        client.get(url)
    for q in ctx.captured_queries:
        print(q["time"], q["sql"][:300])
    prof = cProfile.Profile()
    prof.enable()
    client.get(url)
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(60)
