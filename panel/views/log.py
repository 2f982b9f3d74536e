"""Log: the op log for the chosen scope, with last-7-days counts and a category filter in one toolbar."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from panel import labels
from panel import selectors as reads
from panel.frame import domain_errors, page
from panel.scope import scope_for


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def log(request: HttpRequest) -> HttpResponse:
    scope = scope_for(request)
    category = request.GET.get("category", "")
    category = category if category in labels.CATEGORIES else ""
    before = reads.int_or_none(request.GET.get("before"))
    rows, cursor = reads.oplog_rows(palace_ids=scope.palace_ids, category=category, before=before)
    context: dict[str, Any] = {
        "rows": rows,
        "cursor": cursor,
        "category": category,
        "categories": list(labels.CATEGORIES),
        "palace_names": {p.pk: p for p in scope.palaces},
    }
    if before is None:
        context["week"] = reads.oplog_week(palace_ids=scope.palace_ids, now=timezone.now())
    partial = "more" if before is not None else "log"
    return page(request, "panel/log.html", context, scope=scope, nav="log", partial=partial)
