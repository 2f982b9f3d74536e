"""Episodes: episode memories grouped by source session, each group headed by the session's summary (capture.timeline:
the capture or backfill summary, else the first episode, labelled) and, for the reader's own capture sessions, the
agent, project, start and turns; a date range with presets (today, 7 days, 30 days, all), and "Nearby" (± a window of
one entry)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from capture.timeline import TimelineGroup, session_headers
from memory.selectors import episode_groups, episodes_nearby, memory_get
from panel.forms import EpisodeFilters, int_or_none
from panel.frame import domain_errors, page
from panel.scope import scope_for

DEFAULT_WINDOW_MINUTES = 60


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def episodes(request: HttpRequest) -> HttpResponse:
    scope = scope_for(request)
    f = EpisodeFilters.from_request(request)
    found, cursor = episode_groups(palace_ids=scope.palace_ids, start=f.start, end=f.end, cursor=f.cursor)
    headers = session_headers(user=request.user, groups=found)
    groups = [TimelineGroup(episodes=g, header=headers[(g.palace_id, g.session)]) for g in found]
    context = {"f": f, "groups": groups, "cursor": cursor, "presets": date_presets(f, today=timezone.localdate())}
    partial = "more" if f.cursor else "timeline"
    return page(request, "panel/episodes.html", context, scope=scope, nav="episodes", partial=partial)


@dataclass(frozen=True)
class Preset:
    label: str
    start: date | None
    end: date | None
    on: bool


def date_presets(f: EpisodeFilters, *, today: date) -> list[Preset]:
    """Today, the last 7 and 30 days (today included) and everything, the one matching the range marked on."""
    spans = [(_("Today"), 0), (_("7 days"), 6), (_("30 days"), 29)]
    out = [Preset(str(label), today - timedelta(days=back), today, False) for label, back in spans]
    out.append(Preset(_("All"), None, None, False))
    return [Preset(p.label, p.start, p.end, (p.start, p.end) == (f.start, f.end)) for p in out]


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def nearby(request: HttpRequest, memory_id: int) -> HttpResponse:
    anchor = memory_get(user=request.user, memory_id=memory_id)
    minutes = int_or_none(request.GET.get("minutes")) or DEFAULT_WINDOW_MINUTES
    minutes = max(1, min(minutes, 7 * 24 * 60))
    context = {"anchor": anchor, "minutes": minutes, "near": episodes_nearby(anchor=anchor, minutes=minutes)}
    return page(request, "panel/nearby.html", context, scope=scope_for(request), nav="episodes", partial="near")
