"""`atrium createuser NAME [--email E] [--password-stdin] [--admin]` — a user and their personal palace."""

from __future__ import annotations

import sys
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from palace.actors import Actor
from palace.errors import AtriumError
from palace.services import user_create


class Command(BaseCommand):
    help = "Create a user (with a personal palace). Without --password-stdin the user cannot log in to the panel."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--email", default="")
        parser.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
        parser.add_argument("--admin", action="store_true", help="staff and superuser (Django admin access)")

    def handle(self, *args: Any, **opts: Any) -> None:
        password = None
        if opts["password_stdin"]:
            password = sys.stdin.readline().rstrip("\n")
            # The same validators as the admin's forms (settings.AUTH_PASSWORD_VALIDATORS: length, common
            # passwords, similarity to the user name and e-mail), checked against the user about to be made.
            candidate = get_user_model()(username=opts["name"], email=opts["email"])
            try:
                validate_password(password, user=candidate)
            except ValidationError as exc:
                raise CommandError("the password is refused: " + " ".join(exc.messages)) from exc
        try:
            user = user_create(
                username=opts["name"],
                email=opts["email"],
                password=password,
                is_admin=opts["admin"],
                actor=Actor.for_system("atrium createuser"),
            )
        except AtriumError as exc:
            raise CommandError(exc.message) from exc
        role = "admin" if opts["admin"] else "user"
        self.stdout.write(f"Created {role} {user.get_username()} with a personal palace.")
