"""The zero-cost backfill estimate: what a run with these rules would take, where it would go, and what it would
leave out and why. No model calls, no embedding, no database: only the parsed sessions and the rules.

The work of a session is its user and assistant turns (tool turns carry no text and are not work); each session
gives at most `turns_per_session` of them, its first ones. The run's total budget (`max_turns`) goes to the newest
sessions first, since recent history is the most useful; the session that reaches the budget is cut short, the ones
after it are skipped as over budget.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from capture.importers.rules import BackfillRules, How, resolve_project
from capture.importers.transcript import Session

EMPTY = "empty"
SIDECHAIN = "sidechain"
NO_CWD = "no cwd"
NO_TIMESTAMP = "no timestamp"
OLDER = "older than window"
OVER_BUDGET = "over total turn budget"
WORK_ROLES = ("user", "assistant")


@dataclass(frozen=True)
class SessionEstimate:
    session: Session
    origin: str | None  # the project's git origin, None for the personal palace
    how: How  # how the origin was chosen: "git", "map" or "personal"
    note: str  # why, in words
    work_turns: int  # the session's user and assistant turns
    kept: tuple[int, ...]  # the indexes of the turns a run would process (empty when skipped)
    skip_reason: str | None  # None: the session would run
    cut: bool = False  # kept fewer than the session's work (turns per session or the run's budget)


@dataclass
class Estimate:
    sessions: list[SessionEstimate] = field(default_factory=list)
    skip_reasons: Counter[str] = field(default_factory=Counter)  # skipped sessions by reason

    @property
    def sessions_kept(self) -> int:
        return sum(1 for s in self.sessions if s.skip_reason is None)

    @property
    def sessions_skipped(self) -> int:
        return len(self.sessions) - self.sessions_kept

    @property
    def turns_kept(self) -> int:
        return sum(len(s.kept) for s in self.sessions)

    @property
    def turns_left_out(self) -> int:
        """Work turns a run would not process: skipped sessions' and the cut ones'."""
        return sum(s.work_turns - len(s.kept) for s in self.sessions)


def _last_active(session: Session) -> datetime | None:
    return session.ended_at or session.started_at


def _reason(session: Session, work: int, rules: BackfillRules, now: datetime) -> str | None:
    """Why a session is skipped before the budget is counted, or None."""
    if work == 0:
        return EMPTY
    if session.is_sidechain and not rules.include_sidechains:
        return SIDECHAIN
    if not session.cwd and not rules.include_no_cwd:
        return NO_CWD
    if rules.window_days:
        last = _last_active(session)
        if last is None:
            return NO_TIMESTAMP
        if last < now - timedelta(days=rules.window_days):
            return OLDER
    return None


def estimate(sessions: Sequence[Session], rules: BackfillRules, *, now: datetime, use_git: bool = True) -> Estimate:
    """What a backfill of `sessions` with `rules` would do, one entry per session in the order given. `now` anchors
    the time window; `use_git=False` for uploaded transcripts (see `resolve_project`)."""
    places: dict[str | None, tuple[str | None, How, str]] = {}
    plans: list[tuple[Session, list[int], str | None]] = []
    for session in sessions:
        work = [turn.index for turn in session.turns if turn.role in WORK_ROLES]
        plans.append((session, work, _reason(session, len(work), rules, now)))
    kept: dict[int, tuple[int, ...]] = {}
    over: set[int] = set()
    budget = rules.max_turns
    floor = datetime.min.replace(tzinfo=now.tzinfo)
    by_recency = sorted(
        (i for i, (_, _, reason) in enumerate(plans) if reason is None),
        key=lambda i: _last_active(plans[i][0]) or floor,
        reverse=True,
    )
    for i in by_recency:
        if budget == 0:
            over.add(i)
            continue
        take = tuple(plans[i][1][: min(rules.turns_per_session, budget)])
        kept[i] = take
        budget -= len(take)
    result = Estimate()
    for i, (session, work, reason) in enumerate(plans):
        reason = OVER_BUDGET if i in over else reason
        if session.cwd not in places:
            places[session.cwd] = resolve_project(session.cwd, rules, use_git=use_git)
        origin, how, note = places[session.cwd]
        take = kept.get(i, ())
        result.sessions.append(
            SessionEstimate(
                session=session,
                origin=origin,
                how=how,
                note=note,
                work_turns=len(work),
                kept=take,
                skip_reason=reason,
                cut=reason is None and len(take) < len(work),
            )
        )
        if reason is not None:
            result.skip_reasons[reason] += 1
    return result
