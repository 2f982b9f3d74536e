"""The zero-cost backfill estimate."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from capture.importers.rules import BackfillRules, How
from capture.importers.transcript import Session


@dataclass(frozen=True)
class SessionEstimate:
    session: Session
    origin: str | None
    how: How
    note: str
    kept: tuple[int, ...]  # the indexes of the turns a run would process
    skip_reason: str | None  # None: the session would run


@dataclass
class Estimate:
    sessions: list[SessionEstimate] = field(default_factory=list)
    skip_reasons: Counter[str] = field(default_factory=Counter)

    @property
    def sessions_kept(self) -> int:
        return sum(1 for s in self.sessions if s.skip_reason is None)

    @property
    def turns_kept(self) -> int:
        return sum(len(s.kept) for s in self.sessions)


def estimate(sessions: Sequence[Session], rules: BackfillRules, *, now: datetime) -> Estimate:
    raise NotImplementedError
