"""Episode condensing: a short turn stays as it is; a long one keeps its gist within the limit, code and logs
elided with a marker, and the same text always gives the same episode."""

from __future__ import annotations

import pytest

from capture.extraction import condense_episode

LOG = "\n".join(f"2026-03-0{i % 9 + 1}T10:0{i % 10}:00 INFO worker: task {i} done in 0.{i}s" for i in range(30))
TRACE = 'Traceback (most recent call last):\n  File "capture/x.py", line 3, in f\n    g()\n  File "y.py", line 9\n'


def test_a_short_turn_is_kept_as_is_whitespace_tidied() -> None:
    assert (
        condense_episode("  Fix the login test.\n\n\n\nIt fails on CI.  ") == "Fix the login test.\n\nIt fails on CI."
    )
    short_code = "Run this:\n```\nuv run pytest\n```"
    assert condense_episode(short_code) == short_code  # fits: the turn itself, code included


def test_a_long_turn_elides_code_and_logs_and_keeps_the_prose() -> None:
    text = (
        "The nightly backup failed again. Here is the worker log:\n"
        f"{LOG}\nThen the retention job crashed:\n{TRACE}"
        "```python\n" + "print('x')\n" * 50 + "```\n"
        "I think the retention job deletes the file while pg_dump still writes it."
    )
    episode = condense_episode(text)
    assert len(episode) <= 600 < len(text)
    assert "[log: 30 lines elided]" in episode and "[code: 50 lines elided]" in episode
    assert "[log: 4 lines elided]" in episode  # the traceback
    assert episode.startswith("The nightly backup failed again.")
    assert "retention job deletes the file" in episode and "INFO worker" not in episode
    assert condense_episode(text) == episode


def test_a_long_prose_turn_keeps_its_first_sentences_and_key_lines_within_the_limit() -> None:
    filler = "\n".join(f"Paragraph {i} talks about the weather and other things at some length." for i in range(40))
    text = f"We need a backfill view. It shows progress.\n{filler}\n- We decided the default window is 7 days.\n"
    episode = condense_episode(text, limit=300)
    assert len(episode) <= 300
    assert episode.startswith("We need a backfill view. It shows progress.")
    assert "We decided the default window is 7 days." in episode and episode.endswith("…")
    assert "Paragraph 39" not in episode
    chinese = "我们要做一个回填视图。" + "这一段只是在说天气和别的事情。" * 60
    assert len(condense_episode(chinese, limit=100)) <= 100 and condense_episode(chinese, limit=100).startswith(
        "我们要做"
    )


def test_a_bad_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="limit must be at least 1"):
        condense_episode("text", limit=0)
