"""The panel's websocket: one consumer per connected browser, in a group per user and one per palace membership.

Events come from palace.events (published after a mutation commits). The consumer re-reads the user's current
scope from their session and, when the event's palace is in it, sends small rendered fragments that the htmx ws
extension swaps in by id: the due badge, the Today counts, and the new Log row; after an edge or distillation op, or a
recorded adjudication (kind "judge"), a trigger that makes the Judge page re-fetch its open contradictions,
proposals and recent rulings (with the filters the page shows; elsewhere it has no target and nothing happens); and
for a backfill run's progress (kind "backfill", sent to its owner's user group after each batch and state change:
capture.backfill), the run's card, swapped in by id on the Backfill page (elsewhere nothing has its id).

A page says which of those targets it has (`ws-connect="/ws/panel/?live=today"`: `today` for the counts, `log` for
the Log rows, `judge` for the Judge trigger) and gets only those, besides the due badge every page has: htmx reports
an out-of-band fragment without its target as a console error (htmx:oobErrorNoTarget).

Before each push the consumer checks that the connection's session still signs its user in (the same check Django
makes on every request: the session exists, names this user, the password hash still matches, the user is active).
After a logout, a password change or a deactivation the socket closes (4401) instead of streaming on.
"""

from __future__ import annotations

import asyncio
import logging
from importlib import import_module
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth import get_user
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation.trans_real import parse_accept_lang_header

from capture.backfill import EVENT_KIND as BACKFILL
from capture.backfill import backfill_run_get, backfill_run_view
from palace import rls, selectors
from palace.errors import NotFound
from palace.events import palace_group, user_group
from panel.scope import Scope, scope_for
from panel.shaping import today_summary
from review.selectors import memory_overview

logger = logging.getLogger(__name__)
COUNTS_DEBOUNCE_SECONDS = 0.15  # a burst of writes refreshes the counts once
JUDGE_OPS = ("edge.", "distill.")  # op-log rows that change what the Judge page shows
SIGNED_OUT = 4401  # the close code for a connection without (or no longer with) a signed-in user
LIVE_TARGETS = ("today", "log", "judge")  # what a page may ask for in ?live= (templates/panel/<page>.html)


def live_targets(query_string: bytes) -> frozenset[str]:
    """The targets the connecting page has, from its ?live= (comma-separated); unknown names are ignored."""
    asked = parse_qs(query_string.decode("latin-1")).get("live", [])
    return frozenset(t for value in asked for t in value.split(",") if t in LIVE_TARGETS)


class PanelConsumer(AsyncWebsocketConsumer):
    user: Any
    joined: set[str]
    counts_pending: asyncio.Task[None] | None
    targets: frozenset[str]

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=SIGNED_OUT)
            return
        self.user = user
        self.targets = live_targets(self.scope.get("query_string") or b"")
        self.joined = set()
        self.counts_pending = None
        await self._sync_groups()
        await self.accept()

    async def disconnect(self, code: int) -> None:
        for group in getattr(self, "joined", set()):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The page sends nothing we act on (htmx may send form values); ignore it."""

    async def atrium_event(self, event: dict[str, Any]) -> None:
        kind, payload = event.get("kind"), event.get("payload") or {}
        if kind not in ("membership", "oplog", "judge", BACKFILL):
            return
        if not await database_sync_to_async(self._signed_in)():
            await self._sign_out()
            return
        if kind == "membership":
            await self._sync_groups()
            return
        if kind == BACKFILL:
            html = await database_sync_to_async(self._render_backfill)(payload)
            if html:
                await self.send(text_data=html)
            return
        if kind == "judge":
            html = await database_sync_to_async(self._render_judge)(payload) if "judge" in self.targets else ""
            if html:
                await self.send(text_data=html)
            return
        row = await database_sync_to_async(self._render_row)(payload)
        if not row:  # not in this connection's scope (or not readable): nothing changes on its page
            return
        html = row if "log" in self.targets else ""
        if "judge" in self.targets and str(payload.get("op") or "").startswith(JUDGE_OPS):
            html += render_to_string("panel/_live_judge.html")
        if html:
            await self.send(text_data=html)
        if self.counts_pending is None or self.counts_pending.done():
            self.counts_pending = asyncio.ensure_future(self._send_counts())

    async def _sign_out(self) -> None:
        if self.counts_pending is not None:
            self.counts_pending.cancel()
        await self.disconnect(SIGNED_OUT)
        self.joined = set()
        await self.close(code=SIGNED_OUT)

    async def _send_counts(self) -> None:
        await asyncio.sleep(COUNTS_DEBOUNCE_SECONDS)
        html = await database_sync_to_async(self._render_counts)()
        try:
            await self.send(text_data=html)
        except Exception as exc:  # the browser went away while we rendered: nothing to update
            logger.debug("live counts not sent: %s", exc)

    async def _sync_groups(self) -> None:
        palace_ids = await database_sync_to_async(self._palace_ids)()
        wanted = {user_group(self.user.pk)} | {palace_group(pid) for pid in palace_ids}
        for group in wanted - self.joined:
            await self.channel_layer.group_add(group, self.channel_name)
        for group in self.joined - wanted:
            await self.channel_layer.group_discard(group, self.channel_name)
        self.joined = wanted

    # --- sync helpers (run in the ORM thread) ---------------------------------------------------------------

    def _signed_in(self) -> bool:
        """Whether the session this socket opened with still signs in its user, checked as Django checks a request."""
        key = getattr(self.scope.get("session"), "session_key", None)
        if not key:
            return False
        session = import_module(settings.SESSION_ENGINE).SessionStore(session_key=key)
        user = get_user(SimpleNamespace(session=session))  # type: ignore[arg-type]
        return bool(user.is_authenticated and user.pk == self.user.pk)

    def _palace_ids(self) -> list[int]:
        with rls.acting_as(self.user):
            return selectors.palace_ids_readable(user=self.user)

    def _request(self) -> Any:
        """A request-like view of this connection with a fresh session, so a scope switched in another tab
        applies to the next event."""
        session = self.scope.get("session")
        key = getattr(session, "session_key", None)
        store = import_module(settings.SESSION_ENGINE).SessionStore
        return SimpleNamespace(user=self.user, session=store(session_key=key) if key else {}, language=self._language())

    def _language(self) -> str:
        """The page's language: the chosen one (cookie), else the browser's Accept-Language, as LocaleMiddleware
        decides it for pages."""
        chosen = (self.scope.get("cookies") or {}).get(settings.LANGUAGE_COOKIE_NAME)
        headers = dict(self.scope.get("headers") or [])
        accept = headers.get(b"accept-language", b"").decode("latin-1")
        for candidate in [chosen] + [lang for lang, _ in parse_accept_lang_header(accept)]:
            if not candidate or candidate == "*":
                continue
            try:
                return translation.get_supported_language_variant(candidate)
            except LookupError:
                continue
        return settings.LANGUAGE_CODE

    def _scope(self) -> tuple[Any, Scope]:
        request = self._request()
        return request, scope_for(request)

    def _render_row(self, payload: dict[str, Any]) -> str:
        with rls.acting_as(self.user):  # the ORM thread is shared: the context ends with the call
            return self._render_row_as_user(payload)

    def _render_row_as_user(self, payload: dict[str, Any]) -> str:
        request, scope = self._scope()
        palace_id = payload.get("palace_id")
        if palace_id not in scope.palace_ids:
            return ""
        row = selectors.oplog_get(palace_ids=scope.palace_ids, oplog_id=int(payload.get("id") or 0))
        if row is None:
            return ""
        with translation.override(request.language):
            return render_to_string("panel/_live_row.html", {"row": row, "scope": scope})

    def _render_judge(self, payload: dict[str, Any]) -> str:
        """The Judge page's re-fetch trigger, when the event's palace is in this connection's current scope."""
        with rls.acting_as(self.user):
            _, scope = self._scope()
        return render_to_string("panel/_live_judge.html") if payload.get("palace_id") in scope.palace_ids else ""

    def _render_backfill(self, payload: dict[str, Any]) -> str:
        """The run's card (out of band, by id), read again as this user: only their own run renders."""
        with rls.acting_as(self.user):
            try:
                run = backfill_run_get(user=self.user, run_id=int(payload.get("run") or 0))
            except NotFound:
                return ""
            view = backfill_run_view(run=run)
        with translation.override(self._language()):
            return render_to_string("panel/_backfill_run.html", {"run": view, "oob": True})

    def _render_counts(self) -> str:
        with rls.acting_as(self.user):
            return self._render_counts_as_user()

    def _render_counts_as_user(self) -> str:
        request, scope = self._scope()
        overview = memory_overview(user=self.user, palaces=scope.palaces, now=timezone.now())
        context = {"scope": scope, "reviews_due": overview.reviews_due, "summary": today_summary(overview.stats)}
        context["today"] = "today" in self.targets  # the stats exist on Today only; the badge on every page
        with translation.override(request.language):
            return render_to_string("panel/_live_counts.html", context)
