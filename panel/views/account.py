from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from api import tokens as token_services
from palace import selectors
from palace.actors import Actor
from palace.errors import AtriumError


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    palaces = selectors.palaces_with_roles(user=request.user)
    return render(request, "panel/home.html", {"palaces": palaces})


@require_GET
@login_required
def tokens(request: HttpRequest) -> HttpResponse:
    return render(request, "panel/tokens.html", {"tokens": token_services.tokens_for(user=request.user)})


@require_POST
@login_required
def token_create(request: HttpRequest) -> HttpResponse:
    scope = request.POST.get("scope", "write")
    try:
        token, raw = token_services.token_create(
            user=request.user, label=request.POST.get("label", ""), scope=scope, actor=Actor.for_user(request.user)
        )
    except AtriumError as exc:
        context = {"tokens": token_services.tokens_for(user=request.user), "error": exc.message}
        return render(request, "panel/tokens.html", context, status=422)
    context = {"tokens": token_services.tokens_for(user=request.user), "new_token": token, "raw_token": raw}
    return render(request, "panel/tokens.html", context)


@require_POST
@login_required
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token_services.token_revoke(token_id=token_id, user=request.user, actor=Actor.for_user(request.user))
    except AtriumError:
        return render(
            request,
            "panel/tokens.html",
            {"tokens": token_services.tokens_for(user=request.user), "error": "token not found"},
            status=404,
        )
    return redirect("tokens")
