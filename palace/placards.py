"""Placard scoring: a placard is a memory's short cue, and a good one is unique, distinctive and dated.

dsh-engram's rule, scored 0–1:
- +0.4 globally unique in the palace (no other memory carries the same placard, compared case- and
  width-insensitively);
- +0.3 has a date anchor (a year, an ISO date, a month name with a day or year, a quarter, a CJK date);
- +0.3 no 6-character prefix clash within its room (no other placard there starts with the same 6 characters).

Pure functions over strings: the memory app gathers the other placards and calls these.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

UNIQUE_POINTS = 0.4
DATE_POINTS = 0.3
PREFIX_POINTS = 0.3
PREFIX_CHARS = 6
# A placard scoring below this joins the refurb list: it is either not unique, or clashes in its room, or both
# undated and clashing. Unique and clash-free but undated (0.7) is good enough to keep.
REFURB_BELOW = 0.7
# Fewer active memories than this and a palace is not scanned: in a small store every cue is easy to tell apart.
REFURB_MIN_ACTIVE = 8

_MONTHS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_DATE_PATTERNS = [
    re.compile(r"(?<!\d)(?:19|20)\d{2}[-/.](?:0?[1-9]|1[0-2])(?:[-/.](?:0?[1-9]|[12]\d|3[01]))?(?!\d)"),  # 2026-11-30
    re.compile(r"(?<!\d)(?:0?[1-9]|[12]\d|3[01])[-/.](?:0?[1-9]|1[0-2])[-/.](?:19|20)\d{2}(?!\d)"),  # 30.11.2026
    re.compile(rf"\b(?:{_MONTHS})\.?\s+(?:\d{{1,2}}(?:st|nd|rd|th)?,?\s*)?(?:19|20)?\d{{2}}\b", re.IGNORECASE),
    re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{_MONTHS})\b", re.IGNORECASE),  # 30 Nov
    re.compile(r"\bQ[1-4]\s*[-/']?\s*(?:19|20)?\d{2}\b", re.IGNORECASE),  # Q3 2026, Q3-26
    re.compile(r"(?<![\d.])(?:19|20)\d{2}(?![\d.])"),  # a year on its own
    re.compile(r"\d{2,4}\s*年|\d{1,2}\s*月\s*\d{1,2}\s*[日号]|\d{1,2}\s*月"),  # 2026年, 11月30日
]


def normalize(placard: str) -> str:
    """The form placards are compared in: NFKC (full-width → ASCII), case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", placard).casefold().split())


def has_date_anchor(placard: str) -> bool:
    text = unicodedata.normalize("NFKC", placard)
    return any(p.search(text) for p in _DATE_PATTERNS)


@dataclass(frozen=True)
class PlacardScore:
    score: float
    unique: bool
    dated: bool
    distinct_prefix: bool
    hints: list[str] = field(default_factory=list)

    @property
    def needs_refurb(self) -> bool:
        return self.score < REFURB_BELOW

    @property
    def hint(self) -> str:
        return "; ".join(self.hints)


def placard_score(
    *, placard: str, room: str = "", palace_placards: Iterable[str], room_placards: Iterable[str]
) -> PlacardScore:
    """Score `placard` against the OTHER placards of its palace and of its room (exclude its own memory).

    Returns the score, which parts it earned, and rewrite hints for the parts it missed.
    """
    own = normalize(placard)
    if not own:
        return PlacardScore(
            score=0.0,
            unique=False,
            dated=False,
            distinct_prefix=False,
            hints=["add a placard: a short cue unique in this palace, with a date (e.g. 'deploy freeze 2026-11')"],
        )
    unique = all(normalize(other) != own for other in palace_placards)
    dated = has_date_anchor(placard)
    own_prefix = own[:PREFIX_CHARS]
    clash = next((other for other in room_placards if normalize(other)[:PREFIX_CHARS] == own_prefix), None)
    hints: list[str] = []
    if not unique:
        hints.append("another memory in this palace has the same placard: name what sets this one apart")
    if not dated:
        hints.append("add a date anchor (e.g. '2026-11' or 'Nov 2026')")
    if clash is not None:
        where = f" in {room}" if room else " in its room"
        hints.append(f"starts like '{clash}'{where}: begin with a different word than '{own_prefix}'")
    score = UNIQUE_POINTS * unique + DATE_POINTS * dated + PREFIX_POINTS * (clash is None)
    return PlacardScore(score=round(score, 2), unique=unique, dated=dated, distinct_prefix=clash is None, hints=hints)
