"""The episode timeline with its session headers: episodes grouped by session (newest group first, in time order
inside a group), each group headed by the session's one-line summary. One read for every door: the MCP tool
`memory_episode_timeline`, `GET /api/v1/episodes/timeline` and the panel's Episodes page.

A header says how it was made: the capture session's summary (`llm` or `rules`, from live capture or a backfill)
when the reader has one for that session, else the first episode's placard (`first_episode`), else nothing
(`none`: episodes saved without a session). Capture sessions are their user's alone (row-level security, migration
0002), so a member reading a shared project palace sees another member's session headed by its first episode.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from django.db.models import Count, Q
from django.utils import timezone

from capture.models import CaptureSession, CaptureTurn
from memory.selectors import EpisodeGroup, episode_groups, memory_get
from palace.errors import InvalidInput

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    from memory.models import Memory

DEFAULT_WINDOW_MINUTES = 60
MAX_WINDOW_MINUTES = 7 * 24 * 60
HEADER_CHARS = 200
SESSION_CHARS = 200  # CaptureSession.key and Memory.source_session hold 200
LEAP_SECOND = re.compile(r"(T\d{2}:\d{2}:)60(?:\.\d+)?")


@dataclass(frozen=True)
class SessionHeader:
    text: str
    method: str  # llm | rules (the capture summary) | first_episode | none
    source: str  # capture | backfill (the capture session's) | episode | none
    fallback: str = ""  # why the rules summarised, when they did (the model was down, none configured, ...)
    # The reader's own capture session behind the group, when there is one: the agent (client), the project origin
    # it sent, when it started and how many of the person's turns it holds.
    client: str = ""
    origin: str = ""
    started_at: datetime | None = None
    turns: int = 0


@dataclass(frozen=True)
class TimelineGroup:
    episodes: EpisodeGroup
    header: SessionHeader


@dataclass(frozen=True)
class Timeline:
    mode: str  # range | session | around
    groups: list[TimelineGroup]
    next_cursor: str
    since: datetime | None
    until: datetime | None
    session: str | None
    anchor: Memory | None
    window_minutes: int | None


def timeline_bound(raw: str, *, field: str, end: bool = False) -> datetime:
    """A range bound from an ISO 8601 / RFC 3339 date or date-time. A date means the whole day in the server's time
    zone: its start for `start`, its last instant for `end` (so start=end=a day is that day). A bound beyond what
    PostgreSQL holds once in UTC (year 1 with a positive offset) is the earliest or latest moment there is, as a
    range bound means. InvalidInput names `field`."""
    text = raw.strip().upper()  # RFC 3339 allows "t" and "z"
    try:
        if len(text) == 10:
            moment = datetime.combine(date.fromisoformat(text), time.max if end else time.min)
        else:
            # A leap second (RFC 3339 allows :60) is the last instant of its minute here.
            moment = datetime.fromisoformat(LEAP_SECOND.sub(r"\g<1>59.999999", text))
    except ValueError:
        raise InvalidInput(
            f"{field} must be an ISO 8601 date (2026-03-01) or date-time (2026-03-01T09:30:00Z), not {raw[:40]!r}",
            field=field,
        ) from None
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC) if moment.year > 1 else datetime.min.replace(tzinfo=UTC)


def episode_timeline(
    *,
    user: AbstractBaseUser | AnonymousUser | None,
    palace_ids: Sequence[int],
    since: datetime | None = None,
    until: datetime | None = None,
    session: str | None = None,
    around: int | None = None,
    window_minutes: int | None = None,
    cursor: str = "",
    groups: int = 10,
    per_group: int = 40,
) -> Timeline:
    """Episodes of `palace_ids` (resolved for `user` by the door: only palaces they may read), grouped by session
    with headers. Modes: a range (`since`/`until`, both optional and inclusive), one session's drill-down
    (`session`, which may be combined with a range), or `around` a memory the user may read, ± `window_minutes`
    (default 60) of the moment it happened. Bad combinations raise InvalidInput naming the argument."""
    if around is None and window_minutes is not None:
        raise InvalidInput("window_minutes goes with around (a memory id); give around too", field="window_minutes")
    if around is not None and (since is not None or until is not None):
        raise InvalidInput("give around (a memory id, with window_minutes) or start/end, not both", field="around")
    if since is not None and until is not None and since > until:
        raise InvalidInput("end is before start: give an end on or after the start", field="end")
    if session is not None and not (0 < len(session) <= SESSION_CHARS):
        raise InvalidInput(f"session must be 1–{SESSION_CHARS} characters (a session id)", field="session")
    anchor = None
    if around is not None:
        minutes = DEFAULT_WINDOW_MINUTES if window_minutes is None else window_minutes
        if not 1 <= minutes <= MAX_WINDOW_MINUTES:
            raise InvalidInput(f"window_minutes must be 1–{MAX_WINDOW_MINUTES} (a week)", field="window_minutes")
        anchor = memory_get(user=user, memory_id=around)
        window_minutes = minutes
        since, until = _window(anchor.occurred_at, timedelta(minutes=minutes))
    found, next_cursor = episode_groups(
        palace_ids=palace_ids,
        since=since,
        until=until,
        session=session,
        cursor=cursor,
        groups=groups,
        per_group=per_group,
    )
    headers = session_headers(user=user, groups=found)
    return Timeline(
        mode="around" if anchor is not None else "session" if session is not None else "range",
        groups=[TimelineGroup(episodes=g, header=headers[(g.palace_id, g.session)]) for g in found],
        next_cursor=next_cursor,
        since=since,
        until=until,
        session=session,
        anchor=anchor,
        window_minutes=window_minutes,
    )


def _window(moment: datetime, half: timedelta) -> tuple[datetime, datetime]:
    """moment ± half, held at the first and last moments there are (a memory that happened in year 1 or 9999)."""
    earliest, latest = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)
    since = moment - half if moment - earliest > half else earliest
    until = moment + half if latest - moment > half else latest
    return since, until


def session_headers(
    *, user: AbstractBaseUser | AnonymousUser | None, groups: Sequence[EpisodeGroup]
) -> dict[tuple[int, str], SessionHeader]:
    """The header of each group, by (palace id, session): one query for the user's capture sessions among them
    (with their user turns counted), summarised or not."""
    keys = {(g.palace_id, g.session) for g in groups if g.session}
    summaries: dict[tuple[int, str], CaptureSession] = {}
    if keys and user is not None and user.is_authenticated:
        which = Q()
        for palace_id, key in keys:
            which |= Q(palace_id=palace_id, key=key)
        rows = CaptureSession.objects.filter(which, user_id=user.pk).annotate(
            user_turns=Count("turns", filter=Q(turns__role=CaptureTurn.Role.USER))
        )
        summaries = {
            (s.palace_id, s.key): s
            for s in rows.only(
                "palace_id",
                "key",
                "summary",
                "summary_method",
                "summary_fallback",
                "summary_turns",
                "source",
                "client",
                "origin",
                "started_at",
                "created_at",
            )
        }
    return {(g.palace_id, g.session): _header(g, summaries.get((g.palace_id, g.session))) for g in groups}


def _header(group: EpisodeGroup, captured: CaptureSession | None) -> SessionHeader:
    facts: dict[str, Any] = {}
    if captured is not None:
        facts = {
            "client": captured.client,
            "origin": captured.origin,
            "started_at": captured.started_at or captured.created_at,
            "turns": max(getattr(captured, "user_turns", 0), captured.summary_turns),
        }
        if captured.summary:
            return SessionHeader(
                text=captured.summary[:HEADER_CHARS],
                method=captured.summary_method or "rules",
                source=captured.source,
                fallback=captured.summary_fallback,
                **facts,
            )
    if not group.session or not group.entries:
        return SessionHeader(text="", method="none", source="none")
    first = group.entries[0]
    text = (first.placard or first.content)[:HEADER_CHARS]
    return SessionHeader(text=text, method="first_episode", source="episode", **facts)
