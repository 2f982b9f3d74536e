"""The tuned constants of ranking, by name, and a way to run searches with other values (`atrium eval --cv`).

Every constant here was chosen on development data; the eval's cross-validation (ops.eval.cv) re-chooses each one
on all folds but one and scores it on the one left out, so a value that only fits the data it was tuned on shows.
Overrides are process-wide module attributes: for the eval's single-threaded measurement, never for serving.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from memory.search import rank, views

__all__ = ["TUNABLE", "ranking_constants", "tuned"]

# name -> the module holding it (FLOOR_MARGIN: the e5 entry of rank.FLOOR_MARGINS).
_HOME: dict[str, ModuleType] = {
    "SEMANTIC_WEIGHT": rank,
    "FUSION_ADAPT": rank,
    "DIALOGUE_SEMANTIC_WEIGHT": rank,
    "FLOOR_MARGIN": rank,
    "SPEAKER_CUE": rank,
    "ENTITY_CUE": rank,
    "EPISODE_SHARE": rank,
    "HOP_SHARE": rank,
    "NEIGHBOUR_SHARE": rank,
    "TAIL_TURNS": views,
    "TAIL_CHARS": views,
    "VIEW_MIX": views,
    "LEX_TAIL_TURNS": views,
}
TUNABLE = tuple(_HOME)
_MODEL = "multilingual-e5-small"


def ranking_constants() -> dict[str, float]:
    """The values search uses now, by name."""
    values = {name: float(getattr(_HOME[name], name)) for name in TUNABLE if name != "FLOOR_MARGIN"}
    values["FLOOR_MARGIN"] = float(rank.FLOOR_MARGINS[_MODEL])
    return {name: values[name] for name in TUNABLE}


@contextmanager
def tuned(**values: float) -> Iterator[None]:
    """Run the block with some constants replaced (names from TUNABLE; anything else is a ValueError)."""
    unknown = sorted(set(values) - set(TUNABLE))
    if unknown:
        raise ValueError(f"not a tuned constant: {', '.join(unknown)} (known: {', '.join(TUNABLE)})")
    saved = {name: getattr(_HOME[name], name) for name in values if name != "FLOOR_MARGIN"}
    margins = dict(rank.FLOOR_MARGINS)
    try:
        for name, value in values.items():
            if name == "FLOOR_MARGIN":
                rank.FLOOR_MARGINS = {**margins, _MODEL: float(value)}
            else:  # an int stays an int (a number of turns)
                setattr(_HOME[name], name, type(saved[name])(value))
        yield
    finally:
        for name, value in saved.items():
            setattr(_HOME[name], name, value)
        rank.FLOOR_MARGINS = margins
