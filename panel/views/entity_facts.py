"""The facts timeline of one entity, as an htmx fragment for the Entities view: every fact with its valid time and
record time, the ones not true at the chosen point greyed, and the as-of / known-at filter that reloads it."""

from __future__ import annotations

from datetime import UTC, date, datetime, time

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from memory.knowledge import facts_query
from palace.errors import InvalidInput
from palace.selectors import palace_ids_readable
from panel.frame import domain_errors


class PointForm(forms.Form):
    """The point the timeline is read at; a day means its end (everything known or true on that day counts).
    A form rather than hand parsing: Django's date field reads and reports a bad date for us."""

    as_of = forms.DateField(required=False, label=_("As of"))
    known_at = forms.DateField(required=False, label=_("Known at"))


def _end_of(day: date | None) -> datetime | None:
    return datetime.combine(day, time.max, tzinfo=UTC) if day is not None else None


@require_GET
@login_required
@vary_on_headers("HX-Request")
@domain_errors
def entity_facts(request: HttpRequest, entity_id: int) -> HttpResponse:
    form = PointForm(request.GET)
    if not form.is_valid():
        raise InvalidInput(str(_("Give dates as YYYY-MM-DD.")))
    readable = palace_ids_readable(user=request.user)
    result = facts_query(
        palace_ids=readable,
        entity_id=entity_id,
        as_of=_end_of(form.cleaned_data["as_of"]),
        known_at=_end_of(form.cleaned_data["known_at"]),
        include_invalid=True,  # the timeline shows every fact; the ones not true at the point are greyed
    )
    url = reverse("entity-facts", args=[entity_id])
    context = {"result": result, "form": form, "url": url, "entity_id": entity_id}
    return render(request, "panel/_entity_facts.html", context)
