"""The bench's percentiles: real figures from samples, null (unknown) without any — never a made-up number."""

from __future__ import annotations

from ops.bench.measures import percentiles


def test_percentiles_of_samples_are_nearest_rank() -> None:
    figures = percentiles([float(n) for n in range(1, 101)])
    assert (figures["p50"], figures["p95"], figures["p99"], figures["n"]) == (50.0, 95.0, 99.0, 100)
    assert figures["mean"] == 50.5


def test_percentiles_without_samples_are_unknown_not_a_number() -> None:
    figures = percentiles([])
    assert figures == {"p50": None, "p95": None, "p99": None, "mean": None, "n": 0}
    assert percentiles([7.0])["p99"] == 7.0  # one sample is a real figure (control)
