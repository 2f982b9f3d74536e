"""One line of text from outside (placards, reasons, speakers): its limit is measured on what was sent, before the
tag stripper runs, as the doors' schemas state it."""

from __future__ import annotations

from typing import Any

import pytest

from memory.text import clean_line
from palace.errors import InvalidInput


def test_a_line_over_its_limit_is_refused_before_any_cleaning(monkeypatch: pytest.MonkeyPatch) -> None:
    def must_not_run(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an over-limit line reached the tag stripper")

    monkeypatch.setattr("memory.text.cleaning.strip_protocol_tags", must_not_run)
    with pytest.raises(InvalidInput) as refused:
        clean_line("x" * 201, "placard", 200)
    assert refused.value.message == "placard is at most 200 characters (got 201)"
    assert refused.value.detail == {"field": "placard"}

    # Positive control: within the limit the line goes on to the stripper (patched to fail here).
    with pytest.raises(AssertionError, match="reached the tag stripper"):
        clean_line("x" * 200, "placard", 200)


def test_a_line_within_its_limit_is_cleaned() -> None:
    assert clean_line("  API   port\n<current_user_request>x</current_user_request> ", "placard", 200) == "API port x"
