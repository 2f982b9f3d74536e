"""`atrium token create|list|revoke` — per-user API tokens for REST and MCP. The raw token is printed once.

`create --project ORIGIN` gives the token a default project (accounts.tokens.token_create checks membership):
MCP tools given no `project`, on a connection that names none, work there (api/mcp/runner.py, ToolCall.palace)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from accounts.models import ApiToken
from accounts.tokens import token_create, token_revoke
from palace.actors import Actor
from palace.errors import AtriumError


class Command(BaseCommand):
    help = "Create, list and revoke API tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create")
        create.add_argument("--user", required=True)
        create.add_argument("--name", required=True, help="a label, e.g. 'laptop claude-code'")
        create.add_argument("--scope", choices=["read", "write"], default="write")
        create.add_argument("--expires-days", type=int, default=None)
        create.add_argument(
            "--project",
            default=None,
            metavar="ORIGIN",
            help="default project (a git origin the user is a member of): MCP tools given no `project`, on a "
            "connection that names none, work there",
        )
        listing = sub.add_parser("list")
        listing.add_argument("--user", required=True)
        revoke = sub.add_parser("revoke")
        revoke.add_argument("id", type=int)

    def handle(self, *args: Any, **opts: Any) -> None:
        actor = Actor.for_system("atrium token")
        try:
            if opts["action"] == "create":
                user = self._user(opts["user"])
                expires = None
                if opts["expires_days"] is not None:
                    if opts["expires_days"] < 1:
                        raise CommandError("--expires-days must be at least 1")
                    expires = timezone.now() + timedelta(days=opts["expires_days"])
                token, raw = token_create(
                    user=user,
                    label=opts["name"],
                    scope=opts["scope"],
                    expires_at=expires,
                    project=opts["project"],
                    actor=actor,
                )
                project = (
                    f", default project {token.default_project.origin_key}" if token.default_project is not None else ""
                )
                self.stderr.write(
                    f"Token {token.pk} '{token.label}' ({token.scope}{project}) for {user.get_username()}; "
                    "copy it now, it is not shown again:"
                )
                self.stdout.write(raw)
            elif opts["action"] == "list":
                user = self._user(opts["user"])
                for t in ApiToken.objects.filter(user=user).select_related("default_project").order_by("pk"):
                    used = t.last_used_at.isoformat(timespec="seconds") if t.last_used_at else "never"
                    default = (t.default_project.origin_key if t.default_project is not None else None) or "-"
                    self.stdout.write(
                        f"{t.pk}\t{t.label}\t{t.prefix}…\t{t.scope}\t{t.status}\tlast used {used}\tproject {default}"
                    )
            else:
                token = token_revoke(token_id=opts["id"], user=None, actor=actor)
                self.stdout.write(f"Revoked token {token.pk} '{token.label}'.")
        except AtriumError as exc:
            raise CommandError(exc.message) from exc

    def _user(self, name: str) -> Any:
        try:
            return get_user_model().objects.get(username=name)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user named {name!r}") from None
