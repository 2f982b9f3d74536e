"""Backfill rules, and which project a session's memories belong to.

A session's project comes from its `cwd`: the git origin read in that directory when it exists where the import
runs, else an explicit mapping (`CWD=ORIGIN`; the longest mapped folder containing the cwd wins), else none (the
personal palace). Which palace that finally is (the project's, when the user is a member) is the caller's decision,
with the database.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Literal

from palace.origins import InvalidOrigin, normalize_origin

How = Literal["git", "map", "personal"]
MAX_TURNS_CEILING = 5000
MAX_WINDOW_DAYS = 3650
GIT_TIMEOUT_SECONDS = 5
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off", ""}


class RulesError(ValueError):
    """A backfill rule has a bad value; `field` names it."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name


def _origin(field_name: str, raw: str) -> str:
    """A git origin in any spelling (`git@host:a/b.git`, `https://host/a/b`, or already `host/a/b`), normalized."""
    try:
        return normalize_origin(raw)
    except InvalidOrigin as error:
        try:
            return normalize_origin(f"https://{raw.strip()}")
        except InvalidOrigin:
            raise RulesError(field_name, str(error)) from None


def _folder(path: str) -> str:
    return path.rstrip("/\\") or path[:1]


@dataclass(frozen=True)
class BackfillRules:
    """What a backfill takes. Constructed directly or with `from_mapping` (a form, the CLI, JSON), the values are
    checked the same way; a bad one raises RulesError naming the field."""

    window_days: int = 7  # sessions active in the last N days; 0 = no limit
    turns_per_session: int = 20  # the first N user/assistant turns of each session
    max_turns: int = 200  # the whole run, 1..5000
    include_sidechains: bool = False  # subagent sessions
    include_no_cwd: bool = False  # sessions that do not say where they ran (they go to the personal palace)
    mappings: dict[str, str] = field(default_factory=dict)  # cwd -> git origin

    def __post_init__(self) -> None:
        for name, low, high in (
            ("window_days", 0, MAX_WINDOW_DAYS),
            ("turns_per_session", 1, MAX_TURNS_CEILING),
            ("max_turns", 1, MAX_TURNS_CEILING),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise RulesError(name, f"a whole number from {low} to {high}, got {value!r}")
            if not low <= value <= high:
                raise RulesError(name, f"must be from {low} to {high}, got {value}")
        for name in ("include_sidechains", "include_no_cwd"):
            if not isinstance(getattr(self, name), bool):
                raise RulesError(name, f"true or false, got {getattr(self, name)!r}")
        if not isinstance(self.mappings, Mapping):
            raise RulesError("mappings", "a mapping of folder to git origin")
        checked: dict[str, str] = {}
        for cwd, origin in self.mappings.items():
            if not isinstance(cwd, str) or not isinstance(origin, str):
                raise RulesError("mappings", f"folder and origin are text, got {cwd!r}={origin!r}")
            if not (cwd.startswith(("/", "~", "\\")) or (len(cwd) > 2 and cwd[1] == ":")):
                raise RulesError(
                    "mappings", f"{cwd!r} is not an absolute folder (send CWD=ORIGIN, e.g. /src/app=github.com/org/app)"
                )
            checked[_folder(cwd)] = _origin("mappings", origin)
        object.__setattr__(self, "mappings", checked)

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> BackfillRules:
        """Rules from loosely typed input: numbers may be strings ("7"), flags "true"/"false"/"on"/"1"…, and
        `mappings` a mapping, a list of "CWD=ORIGIN" strings, or one such string a line. Missing fields keep their
        defaults; an unknown field is an error (a misspelt rule must not be silently ignored)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise RulesError(unknown[0], f"not a backfill rule (the rules are {', '.join(sorted(known))})")
        values: dict[str, object] = {}
        for name, raw in data.items():
            if name in ("window_days", "turns_per_session", "max_turns"):
                values[name] = _number(name, raw)
            elif name in ("include_sidechains", "include_no_cwd"):
                values[name] = _flag(name, raw)
            else:
                values[name] = _mappings(raw)
        return cls(**values)  # type: ignore[arg-type]


def _number(name: str, raw: object) -> object:
    if isinstance(raw, str):
        try:
            return int(raw.strip())
        except ValueError:
            raise RulesError(name, f"a whole number, got {raw!r}") from None
    return raw


def _flag(name: str, raw: object) -> object:
    if isinstance(raw, str):
        if raw.strip().lower() in _TRUE:
            return True
        if raw.strip().lower() in _FALSE:
            return False
        raise RulesError(name, f"true or false, got {raw!r}")
    return raw


def _mappings(raw: object) -> object:
    if raw is None:
        return {}
    if isinstance(raw, str):
        raw = [line for line in raw.splitlines() if line.strip()]
    if isinstance(raw, list | tuple):
        pairs: dict[str, str] = {}
        for item in raw:
            if not isinstance(item, str) or "=" not in item:
                raise RulesError("mappings", f"send CWD=ORIGIN, e.g. /src/app=github.com/org/app; got {item!r}")
            cwd, origin = item.split("=", 1)
            pairs[cwd.strip()] = origin.strip()
        return pairs
    return raw


def git_origin(cwd: str) -> str | None:
    """The normalized origin of the git repository containing `cwd` on this machine (`git remote get-url origin`:
    local, no network), or None when the folder does not exist here, is not a checkout, has no origin, or git is
    missing or slow."""
    if not cwd or not os.path.isdir(cwd):
        return None
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
    try:
        done = subprocess.run(
            ["git", "-C", cwd, "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0 or not done.stdout.strip():
        return None
    try:
        return normalize_origin(done.stdout.strip())
    except InvalidOrigin:
        return None  # a local path or other remote that names no hosted repository


def _mapped(cwd: str, mappings: Mapping[str, str]) -> tuple[str, str] | None:
    folder = _folder(cwd)
    matches = [
        (prefix, origin)
        for prefix, origin in mappings.items()
        if folder == prefix or folder.startswith((prefix + "/", prefix + "\\")) or prefix in ("/", "\\")
    ]
    return max(matches, key=lambda match: len(match[0])) if matches else None


def resolve_project(cwd: str | None, rules: BackfillRules, *, use_git: bool = True) -> tuple[str | None, How, str]:
    """(origin or None, how it was chosen, a note saying why). `use_git=False` skips reading this machine's
    checkouts: for transcripts uploaded from another machine, whose folders mean nothing here (and whose paths must
    not probe the server's)."""
    if not cwd:
        return None, "personal", "the session does not say where it ran"
    if use_git:
        origin = git_origin(cwd)
        if origin:
            return origin, "git", f"git origin of {cwd}"
    mapped = _mapped(cwd, rules.mappings)
    if mapped:
        return mapped[1], "map", f"mapped: {mapped[0]}={mapped[1]}"
    where = "no git checkout with an origin here" if use_git else "git not read for uploads"
    return None, "personal", f"{cwd}: {where} and no mapping"
