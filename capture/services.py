"""Capture's writes at the door: where a session's turns go (routing), and storing the turns a client sends, once
each, before the worker extracts them (capture/processing.py).

Storing is idempotent on (user, session, turn index): the session row is locked, the indexes already stored are
read, and the new turns are inserted with ON CONFLICT DO NOTHING, so a resend (the same turns, or a whole transcript
with new turns at the end) stores only what is new. What is stored is the turn after the anti-echo scrub
(capture.extraction.scrub_echo: Atrium's own recall replaced by a placeholder naming the tool) and memory's
cleaning and redaction: no raw secret is ever at rest. A tool turn keeps its tool's name only, never its output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from accounts.caller import Caller
from accounts.usersettings import user_settings_get
from capture.extraction import scrub_echo
from capture.models import CaptureSession, CaptureTurn
from memory.text import clean_line, scrub_inbound_text
from palace.errors import InvalidInput, NotFound, PermissionDenied
from palace.models import Palace
from palace.origins import InvalidOrigin, normalize_origin
from palace.selectors import palace_get, role_in

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

MODES: tuple[str, ...] = tuple(CaptureSession.Mode.values)
MAX_TURNS_PER_REQUEST = 200
MAX_TURN_CHARS = 65_536
MAX_SESSION_CHARS = 200

Chosen = Literal["project", "personal"]


@dataclass(frozen=True)
class TurnIn:
    """One turn as a client sent it (the REST schema checked the types and bounds)."""

    index: int
    role: str
    text: str = ""
    tool: str | None = None
    at: datetime | None = None


@dataclass(frozen=True)
class Routing:
    """The palace a session's turns go to, how it was chosen and why (the capture answer says all three)."""

    palace: Palace
    chosen: Chosen
    why: str


@dataclass(frozen=True)
class ModeChoice:
    mode: str
    source: str  # "request" | "setting"


@dataclass
class IngestResult:
    session_key: str
    mode: ModeChoice
    session: CaptureSession | None = None
    routing: Routing | None = None
    stored: int = 0
    duplicates: int = 0
    pending: int = 0  # turns of the session waiting for the worker, new ones and earlier failures
    redactions: list[str] = field(default_factory=list)
    echoes: list[str] = field(default_factory=list)
    note: str = ""


# --- routing -----------------------------------------------------------------------------------------------------


def capture_route(*, caller: Caller, origin: str | None) -> Routing:
    """Where captured turns go: the project palace of `origin` when the caller is an editor or owner there; with no
    origin, the token's default project when they may write it; else their personal palace, with the reason. Never a
    palace they cannot write, and never a new project (capture does not create palaces)."""
    user = caller.user
    personal = palace_get(user=user, write=True)
    if origin is None or not origin.strip():
        default = caller.default_project()
        if default is not None and role_in(user=user, palace=default) in ("owner", "editor"):
            return Routing(default, "project", f"no origin sent: the token's default project {default.label}")
        return Routing(personal, "personal", "no origin sent")
    try:
        key = normalize_origin(origin)
    except InvalidOrigin as exc:
        return Routing(personal, "personal", f"the origin is not a git origin ({exc})")
    try:
        project = palace_get(user=user, origin=f"https://{key}", write=True)
    except NotFound:
        # The same words whether the project exists or not: capture is no existence oracle.
        return Routing(personal, "personal", f"not a member of {key}")
    except PermissionDenied:
        return Routing(personal, "personal", f"a viewer of {key}: captures go to a project you may write")
    role = role_in(user=user, palace=project) or "member"
    return Routing(project, "project", f"{role} of {key}")


def capture_mode_for(*, user: AbstractBaseUser, requested: str | None) -> ModeChoice:
    """The mode a capture runs in: the one the client sent ("request"), else the user's capture_mode setting
    ("setting"; "light" until they change it, accounts.usersettings)."""
    if requested is not None:
        if requested not in MODES:
            raise InvalidInput(f"mode must be one of {', '.join(MODES)} or null", field="mode")
        return ModeChoice(requested, "request")
    return ModeChoice(user_settings_get(user=user).capture_mode, "setting")


# --- storing -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Clean:
    index: int
    role: str
    text: str
    tool: str
    at: datetime | None
    redactions: list[str]
    echoes: list[str]


def _clean(turn: TurnIn) -> _Clean:
    """The turn as it is kept: a tool turn by its tool's name only; any other with Atrium's recall replaced by a
    placeholder (anti-echo), forged protocol tags and control characters stripped, secrets redacted."""
    tool = clean_line(turn.tool or "", "tool", 200)
    if turn.role == CaptureTurn.Role.TOOL:
        return _Clean(turn.index, turn.role, "", tool, turn.at, [], [])
    if len(turn.text) > MAX_TURN_CHARS:
        raise InvalidInput(f"a turn's text is at most {MAX_TURN_CHARS} characters", field="text")
    scrubbed = scrub_echo(turn.text.replace("\x00", ""))
    redacted = scrub_inbound_text(scrubbed.text)
    return _Clean(turn.index, turn.role, redacted.text, tool, turn.at, sorted(set(redacted.types)), scrubbed.removed)


def _turn_row(session: CaptureSession, c: _Clean, now: datetime) -> CaptureTurn:
    """The row a cleaned turn is stored as (one capture and a whole backfill import store the same)."""
    return CaptureTurn(
        session=session,
        index=c.index,
        role=c.role,
        text=c.text,
        tool=c.tool,
        at=c.at or now,
        redactions=c.redactions,
        echoes=c.echoes,
    )


def _session_for(*, user: AbstractBaseUser, key: str, routing: Routing) -> CaptureSession:
    """The user's session with this key, locked for this transaction; created (ON CONFLICT DO NOTHING, then read)
    when it is new, so two first calls of one session at once make one row."""
    CaptureSession.objects.bulk_create(
        [CaptureSession(user_id=user.pk, key=key, palace=routing.palace)], ignore_conflicts=True
    )
    return CaptureSession.objects.select_for_update().get(user_id=user.pk, key=key)


def capture_ingest(
    *,
    caller: Caller,
    session_key: str,
    turns: Sequence[TurnIn],
    client: str = "",
    origin: str | None = None,
    cwd: str = "",
    mode: str | None = None,
    now: datetime | None = None,
) -> IngestResult:
    """Store the turns of one session once each and say what happened (the worker is queued by the caller, after
    the commit: capture/tasks.py). Mode off stores nothing. Turn indexes already stored, or repeated in this request,
    are counted as duplicates and left as they were."""
    now = now or timezone.now()
    key = clean_line(session_key, "session", MAX_SESSION_CHARS)
    if not key:
        raise InvalidInput("session is empty", field="session")
    if len(turns) > MAX_TURNS_PER_REQUEST:
        raise InvalidInput(f"at most {MAX_TURNS_PER_REQUEST} turns a request: send the rest in the next one")
    choice = capture_mode_for(user=caller.user, requested=mode)
    if choice.mode == CaptureSession.Mode.OFF:
        return IngestResult(session_key=key, mode=choice, note="mode off: nothing was stored")
    routing = capture_route(caller=caller, origin=origin)
    cleaned: dict[int, _Clean] = {}
    for turn in turns:
        cleaned.setdefault(turn.index, _clean(turn))  # the first of a repeated index wins; the rest are duplicates
    with transaction.atomic():
        session = _session_for(user=caller.user, key=key, routing=routing)
        have = set(CaptureTurn.objects.filter(session=session, index__in=list(cleaned)).values_list("index", flat=True))
        new = [c for i, c in sorted(cleaned.items()) if i not in have]
        CaptureTurn.objects.bulk_create(
            [_turn_row(session, c, now) for c in new],
            ignore_conflicts=True,  # INSERT ... ON CONFLICT (session, index) DO NOTHING: the key decides, always
        )
        _session_update(
            session=session,
            caller=caller,
            routing=routing,
            client=client,
            origin=origin,
            cwd=cwd,
            mode=choice.mode,
            times=[c.at or now for c in new],
        )
        pending = CaptureTurn.objects.filter(session=session, state=CaptureTurn.State.PENDING).count()
    return IngestResult(
        session_key=key,
        mode=choice,
        session=session,
        routing=routing,
        stored=len(new),
        duplicates=len(turns) - len(new),
        pending=pending,
        redactions=sorted({r for c in new for r in c.redactions}),
        echoes=[e for c in new for e in c.echoes],
    )


@dataclass(frozen=True)
class SessionIn:
    """One session's turns for `capture_ingest_many`, with what a capture call sends beside them."""

    key: str
    turns: Sequence[TurnIn]
    client: str = ""
    origin: str | None = None
    cwd: str = ""


def capture_ingest_many(
    *, caller: Caller, sessions: Sequence[SessionIn], mode: str | None = None, now: datetime | None = None
) -> list[IngestResult]:
    """`capture_ingest` for many sessions of one caller at once (a backfill stores a whole import), one result each
    in order, the same rows as one call a session gives; what a call asks per session is asked once: the mode, the
    routing of each origin, the sessions (created ON CONFLICT DO NOTHING, then read and locked), the indexes already
    stored, the new turns (one insert), the sessions' updates (one statement) and the pending counts. Any number of
    turns a session (no request bound: nothing here came over the wire)."""
    now = now or timezone.now()
    keys = [clean_line(s.key, "session", MAX_SESSION_CHARS) for s in sessions]
    if not all(keys) or len(set(keys)) != len(keys):
        raise InvalidInput("every session needs a key of its own", field="session")
    choice = capture_mode_for(user=caller.user, requested=mode)
    if choice.mode == CaptureSession.Mode.OFF:
        return [IngestResult(session_key=k, mode=choice, note="mode off: nothing was stored") for k in keys]
    routes: dict[str | None, Routing] = {}
    for s in sessions:
        if s.origin not in routes:
            routes[s.origin] = capture_route(caller=caller, origin=s.origin)
    cleaned: list[dict[int, _Clean]] = []
    for s in sessions:
        mine: dict[int, _Clean] = {}
        for turn in s.turns:
            mine.setdefault(turn.index, _clean(turn))  # the first of a repeated index wins; the rest are duplicates
        cleaned.append(mine)
    user = caller.user
    with transaction.atomic():
        CaptureSession.objects.bulk_create(
            [
                CaptureSession(user_id=user.pk, key=k, palace=routes[s.origin].palace)
                for k, s in zip(keys, sessions, strict=True)
            ],
            ignore_conflicts=True,
        )
        rows = CaptureSession.objects.select_for_update().filter(user_id=user.pk, key__in=keys).order_by("pk")
        by_key = {row.key: row for row in rows}
        have = set(
            CaptureTurn.objects.filter(
                session__in=list(by_key.values()), index__in=sorted({i for c in cleaned for i in c})
            ).values_list("session_id", "index")
        )
        news = [
            [c for i, c in sorted(mine.items()) if (by_key[k].pk, i) not in have]
            for k, mine in zip(keys, cleaned, strict=True)
        ]
        CaptureTurn.objects.bulk_create(
            [_turn_row(by_key[k], c, now) for k, new in zip(keys, news, strict=True) for c in new],
            ignore_conflicts=True,  # INSERT ... ON CONFLICT (session, index) DO NOTHING: the key decides, always
        )
        for k, s, new in zip(keys, sessions, news, strict=True):
            _session_apply(
                session=by_key[k],
                caller=caller,
                routing=routes[s.origin],
                client=s.client,
                origin=s.origin,
                cwd=s.cwd,
                mode=choice.mode,
                times=[c.at or now for c in new],
            )
        CaptureSession.objects.bulk_update(list(by_key.values()), _SESSION_FIELDS)
        pending = dict(
            CaptureTurn.objects.filter(session__in=list(by_key.values()), state=CaptureTurn.State.PENDING)
            .values("session_id")
            .annotate(n=Count("id"))
            .values_list("session_id", "n")
        )
    return [
        IngestResult(
            session_key=k,
            mode=choice,
            session=by_key[k],
            routing=routes[s.origin],
            stored=len(new),
            duplicates=len(s.turns) - len(new),
            pending=pending.get(by_key[k].pk, 0),
            redactions=sorted({r for c in new for r in c.redactions}),
            echoes=[e for c in new for e in c.echoes],
        )
        for k, s, new in zip(keys, sessions, news, strict=True)
    ]


_SESSION_FIELDS = [
    "palace",
    "routed_by",
    "routing_reason",
    "client",
    "origin",
    "cwd",
    "mode",
    "token_id",
    "token_label",
    "started_at",
    "last_turn_at",
]


def _session_update(**kwargs: Any) -> None:
    session = kwargs["session"]
    _session_apply(**kwargs)
    session.save()


def _session_apply(
    *,
    session: CaptureSession,
    caller: Caller,
    routing: Routing,
    client: str,
    origin: str | None,
    cwd: str,
    mode: str,
    times: Sequence[datetime],
) -> None:
    """The session follows its latest call: its palace (a user who became an editor of the project since captures
    there from now on), client, origin, cwd, mode and the token; its time span grows with the new turns."""
    session.palace = routing.palace
    session.routed_by, session.routing_reason = routing.chosen, routing.why[:300]
    session.client = clean_line(client or session.client, "client", 64)
    if origin is not None and origin.strip():
        try:
            session.origin = normalize_origin(origin)
        except InvalidOrigin:
            session.origin = clean_line(origin, "origin", 400)
    session.cwd = clean_line(cwd, "cwd", 1000) if cwd else session.cwd
    session.mode = mode
    if caller.token is not None:
        session.token_id, session.token_label = caller.token.pk, caller.token.label
    if times:
        session.started_at = min([*times, *([session.started_at] if session.started_at else [])])
        session.last_turn_at = max([*times, *([session.last_turn_at] if session.last_turn_at else [])])
