"""`atrium project create ORIGIN --owner NAME [--member NAME:ROLE ...]`, `atrium project add-member ...`, and
`atrium project requests` (people's requests for new projects awaiting approval, ATRIUM_PROJECT_APPROVAL: create the
project with the requester as `--owner` to approve one)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from palace.actors import Actor
from palace.errors import AtriumError
from palace.models import Membership, Palace, ProjectRequest
from palace.origins import InvalidOrigin, normalize_origin
from palace.services import member_remove, member_set, project_create


def _user(name: str) -> Any:
    try:
        return get_user_model().objects.get(username=name)
    except get_user_model().DoesNotExist:
        raise CommandError(f"no user named {name!r} (create one with `atrium createuser {name}`)") from None


def _member_spec(spec: str) -> tuple[str, str]:
    name, sep, role = spec.rpartition(":")
    if not sep or not name or role not in Membership.Role.values:
        raise CommandError(f"--member takes NAME:ROLE with ROLE one of {', '.join(Membership.Role.values)}")
    return name, role


def _project(origin: str) -> Palace:
    try:
        key = normalize_origin(origin)
    except InvalidOrigin as exc:
        raise CommandError(str(exc)) from exc
    palace = Palace.objects.filter(origin_key=key).first()
    if palace is None:
        raise CommandError(f"no project palace for {key}")
    return palace


class Command(BaseCommand):
    help = "Manage project palaces (one per git origin) and their members."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a project palace")
        create.add_argument("origin")
        create.add_argument("--owner", required=True)
        create.add_argument("--name", default="")
        create.add_argument("--member", action="append", default=[], metavar="NAME:ROLE")
        add = sub.add_parser("add-member", help="add a member or change their role")
        add.add_argument("origin")
        add.add_argument("member", nargs="+", metavar="NAME:ROLE")
        remove = sub.add_parser("remove-member", help="remove a member")
        remove.add_argument("origin")
        remove.add_argument("name")
        sub.add_parser("list", help="list project palaces")
        sub.add_parser("requests", help="list requests for new projects awaiting approval")

    def handle(self, *args: Any, **opts: Any) -> None:
        actor = Actor.for_system("atrium project")
        try:
            getattr(self, f"_{opts['action'].replace('-', '_')}")(opts, actor)
        except AtriumError as exc:
            raise CommandError(exc.message) from exc

    def _create(self, opts: dict[str, Any], actor: Actor) -> None:
        members = [(_user(n), r) for n, r in map(_member_spec, opts["member"])]
        with transaction.atomic():
            palace = project_create(origin=opts["origin"], owner=_user(opts["owner"]), name=opts["name"], actor=actor)
            for user, role in members:
                member_set(palace=palace, user=user, role=role, actor=actor)
        self.stdout.write(f"Created project palace {palace.origin_key} (id {palace.pk}).")

    def _add_member(self, opts: dict[str, Any], actor: Actor) -> None:
        palace = _project(opts["origin"])
        for name, role in map(_member_spec, opts["member"]):
            member_set(palace=palace, user=_user(name), role=role, actor=actor)
            self.stdout.write(f"{name} is {role} of {palace.origin_key}.")

    def _remove_member(self, opts: dict[str, Any], actor: Actor) -> None:
        palace = _project(opts["origin"])
        member_remove(palace=palace, user=_user(opts["name"]), actor=actor)
        self.stdout.write(f"Removed {opts['name']} from {palace.origin_key}.")

    def _list(self, opts: dict[str, Any], actor: Actor) -> None:
        for palace in Palace.objects.filter(kind=Palace.Kind.PROJECT).order_by("origin_key"):
            members = ", ".join(f"{m.user.get_username()}:{m.role}" for m in palace.memberships.select_related("user"))
            self.stdout.write(f"{palace.pk}\t{palace.origin_key}\t{members}")

    def _requests(self, opts: dict[str, Any], actor: Actor) -> None:
        pending = ProjectRequest.objects.filter(state=ProjectRequest.State.PENDING).select_related("requester")
        for row in pending.order_by("created_at", "pk"):
            who = row.requester.get_username()
            self.stdout.write(f"{row.pk}\t{row.origin_key}\t{who}\t{row.created_at:%Y-%m-%d %H:%M}")
        if not pending.exists():
            self.stdout.write("No requests for new projects await approval.")
        else:
            self.stdout.write("Approve one with `atrium project create ORIGIN --owner NAME` (or in the admin).")
