"""Backfill rules: validation that names the field, and where a session's project comes from."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from capture.importers import BackfillRules, RulesError, git_origin, resolve_project


def test_defaults_match_the_issue() -> None:
    rules = BackfillRules()
    assert (rules.window_days, rules.turns_per_session, rules.max_turns) == (7, 20, 200)
    assert (rules.include_sidechains, rules.include_no_cwd, rules.mappings) == (False, False, {})


def test_from_mapping_reads_form_and_cli_values() -> None:
    rules = BackfillRules.from_mapping(
        {
            "window_days": "0",
            "turns_per_session": 5,
            "max_turns": " 5000 ",
            "include_sidechains": "on",
            "include_no_cwd": "false",
            "mappings": "/home/alice/src/demo=git@github.com:acme/demo.git\n\n/srv/app/=github.com/acme/app",
        }
    )
    assert (rules.window_days, rules.turns_per_session, rules.max_turns) == (0, 5, 5000)
    assert (rules.include_sidechains, rules.include_no_cwd) == (True, False)
    assert rules.mappings == {"/home/alice/src/demo": "github.com/acme/demo", "/srv/app": "github.com/acme/app"}
    assert BackfillRules.from_mapping({"mappings": ["/a=https://gitlab.example.com/x/y.git"]}).mappings == {
        "/a": "gitlab.example.com/x/y"
    }
    assert BackfillRules.from_mapping({}) == BackfillRules()


@pytest.mark.parametrize(
    ("data", "field", "says"),
    [
        ({"max_turns": 0}, "max_turns", "from 1 to 5000, got 0"),
        ({"max_turns": "5001"}, "max_turns", "from 1 to 5000, got 5001"),
        ({"max_turns": "lots"}, "max_turns", "a whole number, got 'lots'"),
        ({"max_turns": 2.5}, "max_turns", "a whole number from 1 to 5000"),
        ({"max_turns": True}, "max_turns", "a whole number from 1 to 5000"),
        ({"turns_per_session": 0}, "turns_per_session", "from 1 to 5000"),
        ({"window_days": -1}, "window_days", "from 0 to 3650, got -1"),
        ({"include_sidechains": "maybe"}, "include_sidechains", "true or false, got 'maybe'"),
        ({"include_no_cwd": 1}, "include_no_cwd", "true or false, got 1"),
        ({"mappings": ["/src/app"]}, "mappings", "send CWD=ORIGIN"),
        ({"mappings": {"src/app": "github.com/a/b"}}, "mappings", "not an absolute folder"),
        ({"mappings": {"/src/app": "not an origin"}}, "mappings", "is not a git origin|a git origin is a URL"),
        ({"mappings": 7}, "mappings", "a mapping of folder to git origin"),
        ({"window": 3}, "window", "not a backfill rule"),
    ],
)
def test_bad_rules_name_the_field(data: dict[str, object], field: str, says: str) -> None:
    with pytest.raises(RulesError, match=says) as caught:
        BackfillRules.from_mapping(data)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")


def test_direct_construction_is_checked_too() -> None:
    with pytest.raises(RulesError, match="max_turns: must be from 1 to 5000, got 9000"):
        BackfillRules(max_turns=9000)
    assert BackfillRules(max_turns=5000).max_turns == 5000


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "demo"
    (repo / "src" / "pkg").mkdir(parents=True)
    git("init", "-q", cwd=repo)
    git("remote", "add", "origin", "git@github.com:Acme/Demo.git", cwd=repo)
    return repo


def test_git_origin_reads_the_checkout_here(checkout: Path, tmp_path: Path) -> None:
    assert git_origin(str(checkout)) == "github.com/Acme/Demo"
    assert git_origin(str(checkout / "src" / "pkg")) == "github.com/Acme/Demo"  # a folder inside it

    bare = tmp_path / "no-origin"
    bare.mkdir()
    git("init", "-q", cwd=bare)
    assert git_origin(str(bare)) is None
    local = tmp_path / "local-remote"
    local.mkdir()
    git("init", "-q", cwd=local)
    git("remote", "add", "origin", str(bare), cwd=local)  # a path, not a hosted repository
    assert git_origin(str(local)) is None
    assert git_origin(str(tmp_path / "not-here")) is None
    assert git_origin("") is None


def test_resolve_project_git_then_map_then_personal(checkout: Path) -> None:
    rules = BackfillRules(
        mappings={
            str(checkout): "github.com/acme/mapped",  # git wins over a mapping for the same folder
            "/home/alice/src": "github.com/acme/monorepo",
            "/home/alice/src/demo": "git@github.com:acme/demo.git",
        }
    )
    assert resolve_project(str(checkout / "src"), rules) == (
        "github.com/Acme/Demo",
        "git",
        f"git origin of {checkout / 'src'}",
    )
    # No checkout there on this machine: the longest mapped folder containing the cwd.
    assert resolve_project("/home/alice/src/demo/api", rules) == (
        "github.com/acme/demo",
        "map",
        "mapped: /home/alice/src/demo=github.com/acme/demo",
    )
    assert resolve_project("/home/alice/src/other", rules)[:2] == ("github.com/acme/monorepo", "map")
    assert resolve_project("/home/alice/srcs", rules) == (
        None,
        "personal",
        "/home/alice/srcs: no git checkout with an origin here and no mapping",
    )
    assert resolve_project(None, rules) == (None, "personal", "the session does not say where it ran")
    # Uploads: the server's own checkouts are not read; mappings still apply.
    assert resolve_project(str(checkout), rules, use_git=False) == (
        "github.com/acme/mapped",
        "map",
        f"mapped: {checkout}=github.com/acme/mapped",
    )
    assert resolve_project(str(checkout.parent), BackfillRules(), use_git=False) == (
        None,
        "personal",
        f"{checkout.parent}: git not read for uploads and no mapping",
    )
