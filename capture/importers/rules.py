"""Backfill rules and where a session's memories go."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

How = Literal["git", "map", "personal"]


class RulesError(ValueError):
    """A backfill rule has a bad value; `field` names it."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name


@dataclass(frozen=True)
class BackfillRules:
    window_days: int = 7  # 0 = unlimited
    turns_per_session: int = 20
    max_turns: int = 200  # the run's total, 1..5000
    include_sidechains: bool = False
    include_no_cwd: bool = False
    mappings: dict[str, str] = field(default_factory=dict)  # cwd -> git origin

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> BackfillRules:
        raise NotImplementedError


def git_origin(cwd: str) -> str | None:
    """The normalized git origin of the repository at `cwd` on this machine, or None."""
    raise NotImplementedError


def resolve_project(cwd: str | None, rules: BackfillRules) -> tuple[str | None, How, str]:
    """(origin or None, how it was chosen, a note saying why)."""
    raise NotImplementedError
