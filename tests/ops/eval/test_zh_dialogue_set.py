"""The Chinese dialogue dev set (bench/zh-dialogue-dev.jsonl) is what bench/README.md says it is, loads through the
eval's own reader, and is what its generator writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ops.eval import load_dataset

BENCH = Path(__file__).parents[3] / "bench"


def test_the_set_has_the_promised_shape() -> None:
    conversations = load_dataset(BENCH / "zh-dialogue-dev.jsonl")

    assert len(conversations) >= 5  # leave-one-conversation-out needs folds
    assert sum(len(c.memories) for c in conversations) >= 300
    assert sum(len(c.questions) for c in conversations) >= 120
    for conv in conversations:
        ids = {m.id for m in conv.memories}
        for question in conv.questions:
            turns = question.text.split("\n")
            assert 6 <= len(turns) <= 20, question.id
            assert all(": " in turn for turn in turns), question.id  # one "speaker: text" line per turn
            assert turns[-1].split(": ")[0] != "助手", question.id  # the user asks last
            assert question.evidence and set(question.evidence) <= ids, question.id
        assert all(m.text.startswith(m.time.strftime("%Y年%-m月%-d日")) for m in conv.memories)


def test_the_file_is_what_the_generator_writes() -> None:
    made = subprocess.run(
        [sys.executable, str(BENCH / "make_zh_dialogue.py")], capture_output=True, check=True, text=True
    ).stdout

    assert made == (BENCH / "zh-dialogue-dev.jsonl").read_text(encoding="utf-8")
