"""The rule for a missing Chromium (tests/panel/browserkit.py): the browser tests run when it is there; without it
they fail under CI and skip, with the reason, elsewhere. No browser is started here."""

from __future__ import annotations

import pytest

from tests.panel import browserkit


@pytest.mark.parametrize(
    ("value", "ci"),
    [("1", True), ("true", True), ("yes", True), ("", False), ("0", False), ("false", False), ("No", False)],
)
def test_what_counts_as_ci(value: str, ci: bool) -> None:
    assert browserkit.under_ci({"CI": value}) is ci
    assert browserkit.under_ci({}) is False


def test_a_missing_chromium_fails_under_ci_and_skips_elsewhere() -> None:
    assert browserkit.without_chromium(installed=True, ci=True) == "run"
    assert browserkit.without_chromium(installed=True, ci=False) == "run"
    assert browserkit.without_chromium(installed=False, ci=True) == "fail"
    assert browserkit.without_chromium(installed=False, ci=False) == "skip"


def test_the_fixture_check_fails_or_skips_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(browserkit, "CHROMIUM", "/nonexistent/chromium")
    with pytest.raises(pytest.fail.Exception, match="CI is set: under CI the browser tests must run"):
        browserkit.require_chromium({"CI": "1"})
    with pytest.raises(pytest.skip.Exception, match="is not installed .* under CI \\(CI=1\\) this is a failure"):
        browserkit.require_chromium({})
    # Positive control: an executable that is there (/bin/sh stands in for Chromium) passes the check, CI or not.
    monkeypatch.setattr(browserkit, "CHROMIUM", "/bin/sh")
    browserkit.require_chromium({"CI": "1"})
    browserkit.require_chromium({})
