"""`atrium bench mcp`: the command passes its typed options to ops.bench.run_mcp_bench and refuses bad ones.

The benchmark itself runs in tests/api/mcp/test_timing.py (in process) and tests/api/mcp/test_real_server.py (a real
server); `atrium bench search` in tests/memory/search/test_search.py.
"""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from ops import bench


def test_bench_mcp_passes_its_options_to_the_mcp_bench(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(bench, "run_mcp_bench", lambda **kwargs: calls.append(kwargs))
    out = StringIO()

    call_command("bench", "mcp", "--clients", "2", "--json", stdout=out)
    call_command("bench", "mcp", "--url", "http://x/mcp", "--token", "a", "--token", "b", "--seconds", "5")

    assert [{k: v for k, v in c.items() if k != "stdout"} for c in calls] == [
        {"clients": 2, "seconds": 30.0, "url": None, "tokens": [], "as_json": True},
        {"clients": 20, "seconds": 5.0, "url": "http://x/mcp", "tokens": ["a", "b"], "as_json": False},
    ]
    assert calls[0]["stdout"]._out is out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--clients", "0"], "--clients must be 1–500"),
        (["--clients", "501"], "--clients must be 1–500"),
        (["--seconds", "0"], "--seconds 0–3600"),
        (["--url", "http://x/mcp"], "--url needs at least one --token"),
    ],
)
def test_bench_mcp_refuses_bad_options_before_starting_anything(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], message: str
) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(bench, "run_mcp_bench", lambda **kwargs: calls.append(kwargs))
    with pytest.raises(CommandError, match=message):
        call_command("bench", "mcp", *argv)
    assert calls == []
    call_command("bench", "mcp", "--clients", "1", "--url", "http://x/mcp", "--token", "t")  # control
    assert len(calls) == 1


@pytest.mark.slow
def test_bench_mcp_against_atrium_up_with_its_worker_reports_errors_lost_and_latency() -> None:
    """The short version of `atrium bench mcp --clients 50 --seconds 60 --json` (figures in the README)."""
    out = StringIO()
    bench.run_mcp_bench(clients=5, seconds=5, url=None, tokens=[], as_json=True, stdout=out)
    report = json.loads(out.getvalue())
    assert report["server"].startswith("atrium up (web and worker)")
    assert report["errors"] == 0 and report["lost"] == 0, report["error_examples"]
    assert report["calls"] > 0 and report["saves_acknowledged"] > 0
    assert report["saves_readable"] == report["saves_acknowledged"]
    assert 0 < report["p50_ms"] <= report["p95_ms"]
    assert {"throughput_per_s", "load_average", "tools"} <= set(report)
