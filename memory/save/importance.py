"""How important a new memory starts out, when the caller did not say (README, "Forgetting and bringing back").

A pure rule, no ORM, so it is testable on its own and the same at every door:

1. a start by kind: decisions 0.7, preferences 0.65, skills 0.6, facts 0.5, episodes 0.4 — what was decided or
   preferred is meant to last, what merely happened is the first to fade;
2. +0.15 when the text insists ("always", "never", "must", "important", "critical", "required", 必须, 一定, 永远,
   务必, 重要, 千万);
3. −0.15 when it hedges or dates itself ("maybe", "perhaps", "probably", "for now", "temporarily", "today",
   "this week", 可能, 也许, 暂时, 今天);
4. clamped to [0.05, 0.95]: the rule never claims certainty either way.

An explicit importance from the caller (0–1) wins over the rule; the result says which produced the value.
Decay (memory/jobs/decay.py) archives long-unused memories below ATRIUM_DECAY_IMPORTANCE_BELOW (0.3 by default): with
this rule that is a hedged episode (0.25), never a plain fact or anything insistent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KIND_START = {"decision": 0.7, "preference": 0.65, "skill": 0.6, "fact": 0.5, "episode": 0.4}
STEP = 0.15
LOWEST, HIGHEST = 0.05, 0.95

_INSISTS = re.compile(
    r"\b(?:always|never|must|mustn't|important|critical|crucial|required|mandatory|do not ever)\b"
    r"|必须|一定|永远|务必|重要|千万",
    re.IGNORECASE,
)
_HEDGES = re.compile(
    r"\b(?:maybe|perhaps|probably|possibly|might|for now|temporarily|for the moment|today|tonight|this week)\b"
    r"|可能|也许|暂时|今天|大概",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Importance:
    value: float
    rule: str  # "caller" when given, else how the rule got there ("episode 0.40 − hedge")


def importance_for(*, kind: str, content: str, explicit: float | None = None) -> Importance:
    """The importance a new memory starts with (see the module docstring)."""
    if explicit is not None:
        return Importance(value=float(explicit), rule="caller")
    start = KIND_START.get(kind, 0.5)
    value = start
    rule = f"{kind} {start:.2f}"
    if _INSISTS.search(content):
        value += STEP
        rule += " + insists"
    if _HEDGES.search(content):
        value -= STEP
        rule += " − hedges"
    return Importance(value=round(min(HIGHEST, max(LOWEST, value)), 4), rule=rule)
