"""Log: the op log for the chosen scope, with last-7-days counts and a category filter in one toolbar."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from palace.selectors import oplog_day_counts, oplog_page
from panel import labels
from panel.forms import int_or_none
from panel.frame import domain_errors, is_partial, page
from panel.scope import scope_for
from panel.shaping import oplog_week, week_window

PAGE_SIZE = 50


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def log(request: HttpRequest) -> HttpResponse:
    scope = scope_for(request)
    category = request.GET.get("category", "")
    category = category if category in labels.CATEGORIES else ""
    before = int_or_none(request.GET.get("before"))
    found = oplog_page(user=request.user, palaces=scope.palaces, category=category, before=before, limit=PAGE_SIZE)
    context: dict[str, Any] = {
        "rows": found.items,
        "cursor": found.next_before,
        "category": category,
        "categories": list(labels.CATEGORIES),
        "palace_names": {p.pk: p for p in scope.palaces},
    }
    if before is None or not is_partial(request):  # a "more" link opened as a page still draws the whole page
        days, start = week_window(timezone.now())
        context["week"] = oplog_week(days, oplog_day_counts(palace_ids=scope.palace_ids, since=start))
    partial = "more" if before is not None else "log"
    return page(request, "panel/log.html", context, scope=scope, nav="log", partial=partial)
