"""The account side of the panel: the palaces list, your settings, API tokens (with how to connect an agent once
one is made), and the header's scope switcher."""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts import tokens as token_services
from accounts.models import ApiToken
from accounts.oauth import READ_SCOPE, WRITE_SCOPE
from accounts.usersettings import user_settings_get, user_settings_update
from ops.management.commands.mcp_config import CLIENTS, endpoint, server_entry, snippet
from palace.errors import AtriumError, NotFound
from palace.models import Palace
from palace.selectors import palaces_readable
from panel.forms import SettingsForm
from panel.frame import actor_of, page, user_of
from panel.scope import scope_for, scope_set


@require_GET
def root(request: HttpRequest) -> HttpResponse:
    return redirect("today")


@require_GET
@login_required
def palaces(request: HttpRequest) -> HttpResponse:
    scope = scope_for(request)
    pairs = ([(scope.personal, "owner")] if scope.personal else []) + scope.projects
    return page(request, "panel/home.html", {"palaces": pairs}, scope=scope, nav="palaces")


@require_http_methods(["GET", "POST"])
@login_required
def account(request: HttpRequest) -> HttpResponse:
    """Your settings (accounts.UserSettings): what a search that matches nothing falls back to when the caller does
    not say — in the panel, over REST and over MCP alike — and the mode a capture runs in when its client sends none."""
    user = user_of(request)
    if request.method == "GET":
        now = user_settings_get(user=user)
        form = SettingsForm(initial={"search_fallback": now.search_fallback, "capture_mode": now.capture_mode})
        return _account_page(request, form)
    form = SettingsForm(request.POST)
    if not form.is_valid():
        return _account_page(request, form, status=422)
    data = form.cleaned_data
    user_settings_update(
        user=user,
        search_fallback=data["search_fallback"],
        capture_mode=data["capture_mode"] or None,
        actor=actor_of(request),
    )
    return _account_page(request, form, saved=True)


def _account_page(request: HttpRequest, form: SettingsForm, *, saved: bool = False, status: int = 200) -> HttpResponse:
    context = {"form": form, "saved": saved}
    return page(request, "panel/account.html", context, scope=scope_for(request), nav="account", status=status)


@require_POST
@login_required
def scope_switch(request: HttpRequest) -> HttpResponse:
    raw_project = request.POST.get("project", "")
    try:
        project_id = int(raw_project) if raw_project else None
        scope_set(request=request, mode=request.POST.get("mode", "mine"), project_id=project_id)
    except (ValueError, NotFound) as exc:
        raise Http404("no such scope") from exc
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = "/today/"
    return redirect(target)


@dataclass(frozen=True)
class GrantRow:
    """An OAuth grant as the Tokens page lists it: the client by name and by where it is known (the host of a
    Client ID Metadata Document's URL, else its registered client id), and the scopes in OAuth's words."""

    token: ApiToken
    client: str
    client_where: str
    scopes: str


def grant_row(token: ApiToken) -> GrantRow:
    app = token.oauth_application
    client_id = app.client_id if app is not None else ""
    parts = urlsplit(client_id)
    where = (parts.hostname or client_id) if parts.scheme == "https" else client_id
    scopes = [READ_SCOPE, WRITE_SCOPE] if token.can_write else [READ_SCOPE]
    return GrantRow(
        token=token, client=(app.name if app else "") or client_id, client_where=where, scopes=" ".join(scopes)
    )


def _tokens_page(request: HttpRequest, context: dict[str, object], status: int = 200) -> HttpResponse:
    user = user_of(request)
    projects = palaces_readable(user=user, kind=Palace.Kind.PROJECT)
    rows = token_services.tokens_for(user=user)
    context = {
        "tokens": [t for t in rows if not t.is_oauth_grant],
        "grants": [grant_row(t) for t in rows if t.is_oauth_grant],
        "projects": projects,
        **context,
    }
    context.setdefault("clients", CLIENT_NAMES.items())
    return page(request, "panel/tokens.html", context, scope=scope_for(request), nav="tokens", status=status)


@require_GET
@login_required
def tokens(request: HttpRequest) -> HttpResponse:
    return _tokens_page(request, {})


@require_POST
@login_required
def token_create(request: HttpRequest) -> HttpResponse:
    scope = request.POST.get("scope", "write")
    try:
        token, raw = token_services.token_create(
            user=user_of(request),
            label=request.POST.get("label", ""),
            scope=scope,
            project=request.POST.get("project") or None,
            actor=actor_of(request),
        )
    except AtriumError as exc:
        return _tokens_page(request, {"error": exc.message}, status=422)
    chosen = request.POST.get("client", "")
    context = {"new_token": token, "raw_token": raw, **_connect(request, raw=raw, chosen=chosen)}
    return _tokens_page(request, context)


CLIENT_NAMES = {"claude-code": "Claude Code", "cursor": "Cursor", "codex": "Codex", "generic": "JSON / other"}


def _connect(request: HttpRequest, *, raw: str, chosen: str) -> dict[str, object]:
    """How to connect an agent with the token just made: the MCP URL as `atrium mcp-config` builds it (its own code),
    on ATRIUM_PUBLIC_URL when set (behind a proxy the request's host may be an internal one), else on the address
    this page was asked for; and each client's snippet with the token in it (it is shown this once)."""
    url, _source = endpoint(settings.ATRIUM_PUBLIC_URL or request.build_absolute_uri("/"))
    chosen = chosen if chosen in CLIENTS else "claude-code"
    snippets = []
    for client in CLIENTS:
        text = snippet(client=client, url=url, token=raw)
        if client == "generic":  # the JSON entry most clients' mcp.json takes, beside the plain description
            entry = {"mcpServers": {"atrium": server_entry(client=client, url=url, token=raw, project=None)}}
            text += "\n# ... or as JSON (mcp.json):\n" + json.dumps(entry, indent=2)
        snippets.append({"client": client, "name": CLIENT_NAMES[client], "text": text, "open": client == chosen})
    return {"mcp_url": url, "snippets": snippets, "chosen_client": chosen}


@require_POST
@login_required
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    """Revoke after a confirmation: the first post (the list's button) shows what stops working and asks again;
    only the confirming post (`confirm=yes`) revokes. Works without JavaScript."""
    if request.POST.get("confirm") != "yes":
        mine = [t for t in token_services.tokens_for(user=user_of(request)) if t.pk == token_id]
        if not mine:
            return _tokens_page(request, {"error": _("Token not found.")}, status=404)
        return _tokens_page(request, {"confirm_revoke": mine[0]})
    try:
        token_services.token_revoke(token_id=token_id, user=user_of(request), actor=actor_of(request))
    except AtriumError:
        return _tokens_page(request, {"error": _("Token not found.")}, status=404)
    return redirect("tokens")
