"""Reading JSON Lines defensively: one bad line is counted, never fatal."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

BROKEN_LINE = "broken line"


def records(text: str, skipped: Counter[str]) -> Iterator[dict[str, Any]]:
    """Each JSON object line of `text` in order; a line that is not a JSON object counts as a broken line (a file
    cut off mid-write ends with one), blank lines are ignored."""
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            skipped[BROKEN_LINE] += 1
            continue
        if isinstance(record, dict):
            yield record
        else:
            skipped[BROKEN_LINE] += 1


def first_records(text: str, limit: int = 50) -> list[dict[str, Any]]:
    """Up to `limit` JSON object lines from the start, for format detection."""
    found: list[dict[str, Any]] = []
    ignored: Counter[str] = Counter()
    for record in records(text, ignored):
        found.append(record)
        if len(found) >= limit:
            break
    return found
