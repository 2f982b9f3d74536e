"""Today: the summary bar, the due-today review card, and (loaded after the page) the tour proposal, the room
directory, the refurb list with clarity, and the health ring."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from memory.search import tour_stretch
from memory.selectors import RefurbList, memory_get, refurb_list, room_directory_head
from palace.errors import InvalidInput
from palace.models import Palace
from palace.selectors import oplog_last_id
from panel.frame import actor_of, domain_errors, due_badge, is_partial, page, user_of
from panel.health import health_ring
from panel.scope import Scope, scope_for
from panel.shaping import today_summary
from review.selectors import memory_overview, review_queue, review_upcoming
from review.services import review_grade, review_reveal

GRADES = {"remembered": 5, "hazy": 3, "forgot": 1}
PARTS = ("tour", "rooms", "refurb")
PART_CACHE_SECONDS = 600
REFURB_SHOWN = 12  # the worst few; clarity counts every low placard (RefurbList.low)


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def today(request: HttpRequest) -> HttpResponse:
    scope = scope_for(request)
    part = request.GET.get("part", "")
    if part in PARTS:
        if is_partial(request):
            return page(request, "panel/today.html", _part(scope, part), scope=scope, nav="today", partial=part)
        # Without htmx a region's link opens it as a page of its own (the frame and that region, nothing else).
        return page(request, "panel/today_part.html", {**_part(scope, part), "part": part}, scope=scope, nav="today")
    now = timezone.now()
    overview = memory_overview(user=request.user, palaces=scope.palaces, now=now)
    context: dict[str, Any] = {
        "summary": today_summary(overview.stats),
        "reviews_due": overview.reviews_due,
        "profile_palaces": profile_palaces(scope),
        **_due(request, scope, now),
    }
    return page(request, "panel/today.html", context, scope=scope, nav="today", partial="summary")


@require_GET
@login_required
@vary_on_headers("HX-Request")
def health(request: HttpRequest) -> HttpResponse:
    return page(
        request,
        "panel/today.html",
        {"ring": health_ring(detail=request.user.is_staff)},
        scope=scope_for(request),
        nav="today",
        partial="health",
    )


@require_POST  # it records an access: a GET (a link, a prefetch, another site's image) must not
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def reveal(request: HttpRequest, memory_id: int) -> HttpResponse:
    memory = memory_get(user=request.user, memory_id=memory_id)
    scope = scope_for(request)
    revealed = review_reveal(user=user_of(request), memory_id=memory.pk, now=timezone.now())
    context = {
        "card": revealed,
        "m": revealed.memory,
        "revealed": True,
        "can_grade": memory.palace_id in scope.writable_ids,
    }
    return page(request, "panel/review.html", context, scope=scope, nav="today", partial="card")


@require_POST
@login_required
@domain_errors
def grade(request: HttpRequest, memory_id: int) -> HttpResponse:
    memory = memory_get(user=request.user, memory_id=memory_id, write=True)
    value = GRADES.get(request.POST.get("grade", ""))
    if value is None:
        raise InvalidInput(_("Grade it as remembered, hazy or forgot."))
    now = timezone.now()
    review_grade(memory_id=memory.pk, grade=value, actor=actor_of(request), now=now)
    if not is_partial(request):
        return redirect("today")
    scope = scope_for(request)
    context = {**_due(request, scope, now), "reviews_due": due_badge(request, scope), "graded": True}
    return page(request, "panel/today.html", context, scope=scope, nav="today", partial="due")


def profile_palaces(scope: Scope) -> list[Palace]:
    """The curated-profile cards Today shows: always the personal palace's, and the project's when in scope."""
    chosen = [scope.personal] + ([scope.project] if scope.project in scope.palaces else [])
    return [p for p in chosen if p is not None]


def _due(request: HttpRequest, scope: Scope, now: datetime) -> dict[str, Any]:
    """The due cues; when none is due (always so on day one), the next few to come due, to review early."""
    queue = review_queue(user=request.user, palace_ids=scope.palace_ids, now=now, limit=5)
    upcoming = [] if queue else review_upcoming(user=request.user, palace_ids=scope.palace_ids, now=now, limit=3)
    return {"queue": queue, "upcoming": upcoming}


# Ops that never change a memory's placard, status or slot (review cards and enrolment, evidence verdicts): grading
# a due card on Today must not make the next Today view rescan every placard.
PLACARD_NEUTRAL_OPS = ("review.", "evidence.")


def _refurb(palace: Palace) -> RefurbList:
    """A palace's refurb list, cached until the palace's next op row that can change it: the scan reads every
    placard of the palace, and none of them changes without a mutation, which always writes the log."""
    version = oplog_last_id(palace_id=palace.pk, ignoring=PLACARD_NEUTRAL_OPS)
    key = f"atrium:panel:refurb:{palace.pk}:{version}"
    found: RefurbList | None = cache.get(key)
    if found is None:
        found = refurb_list(palace=palace, limit=REFURB_SHOWN)
        cache.set(key, found, PART_CACHE_SECONDS)
    return found


def _part(scope: Scope, part: str) -> dict[str, Any]:
    if part == "rooms":  # bounded (the newest rooms of each kind), so read fresh every time
        return {"directories": [(p, room_directory_head(palace=p)) for p in scope.palaces]}
    if part == "tour":
        today = timezone.localdate()
        return {"tours": [(p, tour_stretch(palace=p, today=today)) for p in scope.palaces]}
    refurbs = [(p, _refurb(p)) for p in scope.palaces]
    return {"refurbs": refurbs, "clarity": clarity(refurbs)}


def clarity(refurbs: list[tuple[Palace, RefurbList]]) -> float | None:
    """Share of placarded active memories whose placard is clear (not on the refurb list); None when no palace in
    scope was scanned (too small to judge) — never a figure that reads as healthy by default."""
    scanned = [r for _, r in refurbs if r.scanned and r.placarded]
    if not scanned:
        return None
    placarded = sum(r.placarded for r in scanned)
    low = sum(r.low for r in scanned)
    return (placarded - low) / placarded
