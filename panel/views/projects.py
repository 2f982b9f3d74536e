"""Projects: the caller's project palaces with a create form and their invitations (Accept, Decline), and one
project's members with the owner's forms (invite, change role, remove, transfer ownership) and everyone's Leave.
The services (palace/membership.py) decide who may do what; these views validate the form, call one, and show its
answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from palace import membership, selectors
from palace.actors import Actor
from palace.errors import AtriumError, NotFound, PermissionDenied
from panel.forms import ROLE_CHOICES, MemberForm, ProjectCreateForm
from panel.frame import actor_of, domain_errors, page
from panel.scope import scope_for, scope_set


def _list(
    request: HttpRequest, *, form: ProjectCreateForm | None = None, error: str = "", status: int = 200
) -> HttpResponse:
    scope = scope_for(request)
    invitations = membership.invitations_pending(actor=actor_of(request))
    context = {"form": form or ProjectCreateForm(), "error": error, "invitations": invitations}
    return page(request, "panel/projects.html", context, scope=scope, nav="projects", status=status)


def _detail(request: HttpRequest, palace_id: int, *, error: str = "", status: int = 200) -> HttpResponse:
    palace, role, members = membership.project_members(palace_id=palace_id, actor=actor_of(request))
    context = {"palace": palace, "role": role, "members": members, "error": error, "roles": ROLE_CHOICES}
    return page(request, "panel/project.html", context, scope=scope_for(request), nav="projects", status=status)


@require_GET
@login_required
@domain_errors
def projects(request: HttpRequest) -> HttpResponse:
    return _list(request)


@require_POST
@login_required
@domain_errors
def project_create(request: HttpRequest) -> HttpResponse:
    form = ProjectCreateForm(request.POST)
    if not form.is_valid():
        return _list(request, form=form, error=form.errors.as_text(), status=422)
    try:
        palace = membership.project_create_for(actor=actor_of(request), **form.cleaned_data)
    except AtriumError as exc:
        return _list(request, form=form, error=exc.message, status=exc.status)
    # The header's project picker shows the new project at once, chosen (the scope mode stays as it was).
    scope_set(request=request, mode=scope_for(request).mode, project_id=palace.pk)
    return redirect("project", palace_id=palace.pk)


@require_GET
@login_required
@domain_errors
def project(request: HttpRequest, palace_id: int) -> HttpResponse:
    return _detail(request, palace_id)


def _invite(actor: Actor, palace_id: int, d: dict[str, Any]) -> None:
    membership.member_invite(palace_id=palace_id, username=d["username"], role=d["role"], actor=actor)


def _role(actor: Actor, palace_id: int, d: dict[str, Any]) -> None:
    membership.member_role_change(palace_id=palace_id, username=d["username"], role=d["role"], actor=actor)


def _remove(actor: Actor, palace_id: int, d: dict[str, Any]) -> None:
    membership.member_remove_by(palace_id=palace_id, username=d["username"], actor=actor)


def _transfer(actor: Actor, palace_id: int, d: dict[str, Any]) -> None:
    membership.ownership_transfer(palace_id=palace_id, username=d["username"], actor=actor)


def _leave(actor: Actor, palace_id: int, d: dict[str, Any]) -> None:
    membership.project_leave(palace_id=palace_id, actor=actor)


def _accept(actor: Actor, palace_id: int, d: dict[str, Any]) -> None:
    membership.invitation_accept(palace_id=palace_id, actor=actor)


def _decline(actor: Actor, palace_id: int, d: dict[str, Any]) -> None:
    membership.invitation_decline(palace_id=palace_id, actor=actor)


ACTIONS: dict[str, Callable[[Actor, int, dict[str, Any]], None]] = {
    "invite": _invite,
    "role": _role,
    "remove": _remove,
    "transfer": _transfer,
    "leave": _leave,
    "accept": _accept,
    "decline": _decline,
}
# Actions of the acting person on their own membership or invitation: no form to read.
FORMLESS = {"leave", "accept", "decline"}


@require_POST
@login_required
@domain_errors
def member_action(request: HttpRequest, palace_id: int, action: str) -> HttpResponse:
    """One of ACTIONS on a project. Refusals keep the panel's answers (404 for a project that is not yours, 403 for
    a member who is not an owner); a conflict, an unknown user or bad input comes back on the project page with its
    message."""
    run = ACTIONS.get(action)
    if run is None:
        raise NotFound("no such action")
    form = MemberForm(request.POST)
    if action not in FORMLESS and not form.is_valid():
        return _detail(request, palace_id, error=form.errors.as_text(), status=422)
    if action in ("invite", "role") and not form.cleaned_data.get("role"):
        return _detail(request, palace_id, error=_("Choose a role."), status=422)
    try:
        run(actor_of(request), palace_id, {} if action in FORMLESS else form.cleaned_data)
    except PermissionDenied:
        raise
    except AtriumError as exc:  # a project the user cannot see raises NotFound again in _detail: a plain 404
        return _detail(request, palace_id, error=exc.message, status=exc.status)
    if palace_id not in selectors.palace_ids_readable(user=request.user):
        return redirect("projects")  # the actor left, removed themselves or declined
    return redirect("project", palace_id=palace_id)
