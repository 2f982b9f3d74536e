"""Time redaction and tag stripping on hostile input at several sizes (run by hand, never collected by pytest).

    uv run python tests/memory/scripts/time_redaction.py [--sizes 10000,20000,80000]

Pure: imports only memory.text.redaction (no Django). Prints the best of three CPU times per shape and size, the ratio
to the smallest size, and the load average, because the machine is shared and wall-clock figures are noisy.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from memory.text import redact, strip_protocol_tags

SHAPES: dict[str, Callable[[int], str]] = {
    "a=": lambda n: ("a=" * n)[:n],
    "prose": lambda n: ("The staging box runs Postgres 16; ask ops before a restart. " * n)[:n],
    'password="': lambda n: ('password="' * n)[:n],
    "--a '": lambda n: ("--a '" * n)[:n],
    "://a:b": lambda n: ("://a:b" * n)[:n],
    "bearer ": lambda n: ("Bearer " * n)[:n],
    "key: ": lambda n: ("key:" + " " * n)[:n],
    "1234 ": lambda n: ("4111 1111 1111 " * n)[:n],
    "a@": lambda n: ("a@" * n)[:n],
    "<atrium_": lambda n: ("<atrium_" * n)[:n],
    "<а": lambda n: ("<\u0430\u200b" * n)[:n],
}


def best_cpu(fn: Callable[[str], object], text: str, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn(text)
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,20000,80000")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print("load average:", Path("/proc/loadavg").read_text().split()[:3])
    for name in args.shapes.split(","):
        for label, fn in (("redact", redact), ("strip", strip_protocol_tags)):
            times = [best_cpu(fn, SHAPES[name](n)) for n in sizes]
            cells = "  ".join(f"{n // 1000}k {t * 1000:9.1f} ms" for n, t in zip(sizes, times, strict=True))
            ratio = times[-1] / times[0] if times[0] > 0 else float("nan")
            print(f"{label:6} {name!r:14} {cells}   x{ratio:.1f} for x{sizes[-1] / sizes[0]:.0f} size")
    print("load average:", Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    main()
