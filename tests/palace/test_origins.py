from __future__ import annotations

import pytest

from palace.origins import InvalidOrigin, normalize_origin

SAME = [
    "git@github.com:atrium/demo.git",
    "git@github.com:atrium/demo",
    "https://github.com/atrium/demo",
    "https://github.com/atrium/demo.git",
    "https://github.com/atrium/demo/",
    "https://user:secret@GitHub.com/atrium/demo.git",
    "ssh://git@github.com/atrium/demo.git",
    "ssh://git@github.com:22/atrium/demo",
    "git://github.com/atrium/demo.git",
    "  https://github.com/atrium/demo.git  ",
    "github.com/atrium/demo",  # the key itself, as results and exports name a project
    "GitHub.com/atrium/demo.git",
]


@pytest.mark.parametrize("raw", SAME)
def test_ssh_and_https_spellings_are_one_key(raw: str) -> None:
    assert normalize_origin(raw) == "github.com/atrium/demo"


def test_nested_groups_keep_their_path() -> None:
    assert normalize_origin("git@gitlab.example.org:team/sub/repo.git") == "gitlab.example.org/team/sub/repo"


def test_path_case_is_kept_host_case_is_not() -> None:
    assert normalize_origin("https://GITHUB.com/Atrium/Demo") == "github.com/Atrium/Demo"


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "demo",
        "/home/alice/repo",
        "file:///srv/repo.git",
        "https://github.com",
        "https://github.com/solo",
        "ftp://example.com/a/b",
        "git@github.com:",
        "https://exa mple.com/a/b",
        "https://github.com/../etc",
        "javascript:alert(1)",
        "github.com/solo",
        "src/atrium/demo",  # a relative path: its first part is no host
        "localhost/a/b",
        "x" * 500,
    ],
)
def test_implausible_origins_are_refused(raw: str) -> None:
    with pytest.raises(InvalidOrigin):
        normalize_origin(raw)
