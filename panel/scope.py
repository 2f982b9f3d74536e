"""The panel's scope: my palace, one project palace, or both. Chosen in the header, kept in the session and
remembered for the user's next login (accounts.UserSettings.panel_scope/panel_project), and resolved for every view
through the palace access function — never trusted from a request field or a stored choice on its own."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from django.http import HttpRequest

from accounts.usersettings import user_scope_remember, user_settings_get
from palace import selectors
from palace.errors import NotFound
from palace.models import Palace

SESSION_MODE = "atrium_scope"
SESSION_PROJECT = "atrium_project"
MODES = ("mine", "project", "both")


@dataclass
class Scope:
    mode: str
    personal: Palace | None
    project: Palace | None
    projects: list[tuple[Palace, str]]  # every project the user belongs to, with their role
    roles: dict[int, str] = field(default_factory=dict)  # palace id -> role, for the palaces in scope

    @cached_property
    def palaces(self) -> list[Palace]:
        chosen = {"mine": [self.personal], "project": [self.project], "both": [self.personal, self.project]}
        return [p for p in chosen[self.mode] if p is not None]

    @cached_property
    def palace_ids(self) -> list[int]:
        return [p.pk for p in self.palaces]

    @cached_property
    def writable_ids(self) -> set[int]:
        return {pid for pid, role in self.roles.items() if role in selectors.WRITE_ROLES}

    @property
    def can_write(self) -> bool:
        return bool(self.writable_ids)

    @property
    def both(self) -> bool:
        return len(self.palaces) > 1


def scope_for(request: HttpRequest) -> Scope:
    """The caller's scope from the session, falling back to "mine" when the chosen project is no longer theirs."""
    pairs = selectors.palaces_with_roles(user=request.user)
    personal = next((p for p, _ in pairs if p.kind == Palace.Kind.PERSONAL), None)
    projects = [(p, role) for p, role in pairs if p.kind == Palace.Kind.PROJECT]
    if SESSION_MODE not in request.session:
        _restore(request)
    wanted = request.session.get(SESSION_PROJECT)
    project = next((p for p, _ in projects if p.pk == wanted), projects[0][0] if projects else None)
    mode = request.session.get(SESSION_MODE, "mine")
    if mode not in MODES or (mode != "mine" and project is None):
        mode = "mine"
    scope = Scope(mode=mode, personal=personal, project=project, projects=projects)
    roles = {p.pk: role for p, role in pairs}
    scope.roles = {pid: roles[pid] for pid in scope.palace_ids}
    return scope


def scope_set(*, request: HttpRequest, mode: str, project_id: int | None) -> None:
    """Store a new scope. A project the user may not read raises NotFound, like one that does not exist."""
    if mode not in MODES:
        raise NotFound("unknown scope")
    if project_id is not None:
        palace = selectors.palace_get(user=request.user, palace_id=project_id)
        if palace.kind != Palace.Kind.PROJECT:
            raise NotFound("project not found")
        request.session[SESSION_PROJECT] = palace.pk
    request.session[SESSION_MODE] = mode
    user_scope_remember(user=request.user, mode=mode, project_id=project_id)  # type: ignore[arg-type]


def _restore(request: HttpRequest) -> None:
    """A new session (a login) starts from the user's last choice; scope_for checks it like a session's own (a
    project the user left falls back to the first one they belong to, or to "mine")."""
    stored = user_settings_get(user=request.user)
    request.session[SESSION_MODE] = stored.panel_scope or "mine"
    if stored.panel_project_id is not None:
        request.session[SESSION_PROJECT] = stored.panel_project_id
