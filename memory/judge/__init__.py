"""The judge of the write pipeline's fuzzy band: the rules' dispositions (dispositions.py), the model's ruling on
a pair (prompt.py) and how the two combine and are recorded (rulings.py), its settings (config.py) and the reads of
its rulings (selectors.py)."""

from __future__ import annotations

from memory.judge.config import (
    FALLBACK_REASONS,
    JudgeConfig,
    judge_config,
    judge_settings_allowed,
    judge_settings_check,
    judge_settings_public,
    judge_settings_require,
    judge_settings_update,
    judge_test_connection,
    key_mask,
)
from memory.judge.dispositions import ACCEPT, DEFER, DROP, MERGE, Disposition, Neighbour, dispose
from memory.judge.rulings import (
    Judged,
    adjudication_rows,
    adjudications_prune,
    adjudications_record,
    adjudications_write,
    describe,
    judge_dispose,
    save_hint,
)
from memory.judge.selectors import adjudication_why, adjudications_for_edges, adjudications_recent, contradictions_open

__all__ = [
    "ACCEPT",
    "DEFER",
    "DROP",
    "FALLBACK_REASONS",
    "MERGE",
    "Disposition",
    "JudgeConfig",
    "Judged",
    "Neighbour",
    "adjudication_rows",
    "adjudication_why",
    "adjudications_for_edges",
    "adjudications_prune",
    "adjudications_recent",
    "adjudications_record",
    "adjudications_write",
    "contradictions_open",
    "describe",
    "dispose",
    "judge_config",
    "judge_dispose",
    "judge_settings_allowed",
    "judge_settings_check",
    "judge_settings_public",
    "judge_settings_require",
    "judge_settings_update",
    "judge_test_connection",
    "key_mask",
    "save_hint",
]
