"""Who did something: a person in the panel, a person's token (REST or MCP), or a system job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


@dataclass(frozen=True)
class Actor:
    user: AbstractBaseUser | None = None
    token_id: int | None = None
    token_label: str = ""
    system: str = ""

    @classmethod
    def for_user(cls, user: AbstractBaseUser) -> Actor:
        return cls(user=user)

    @classmethod
    def for_token(cls, user: AbstractBaseUser, token_id: int, token_label: str) -> Actor:
        return cls(user=user, token_id=token_id, token_label=token_label)

    @classmethod
    def for_system(cls, job: str) -> Actor:
        return cls(system=job)

    @property
    def kind(self) -> str:
        if self.system:
            return "system"
        return "token" if self.token_id is not None else "user"

    @property
    def user_id(self) -> int | None:
        return None if self.user is None else int(self.user.pk)

    @property
    def label(self) -> str:
        """Who, in a few words, for a row that records a decision: `admin:alice`, `atrium project`, `alice`."""
        name = self.user.get_username() if self.user is not None else ""
        if self.system:
            return f"{self.system}:{name}" if name else self.system
        return name

    def describe(self) -> str:
        if self.system:
            return f"job:{self.system}"
        name = self.user.get_username() if self.user is not None else "?"
        return f"{name} via token {self.token_label}" if self.token_id is not None else name
