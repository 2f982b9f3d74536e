"""The save request's cleaning (memory/save/input.py): the content limit is measured on the text as sent, before any
processing, so over-limit text never reaches the tag stripper or the redactor, and text within it is never refused
for its length after cleaning."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import override_settings

from memory.models import Memory
from memory.save import SaveResult
from palace.errors import InvalidInput
from palace.models import OpLog

Save = Callable[..., SaveResult]
LIMIT = 300


def _must_not_run(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("over-limit content reached the cleaning")


@pytest.fixture
def cleaning_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The redactor and the tag stripper raise, as the pipeline reads them (memory.text's face, bound in
    memory.save.input): whatever reaches them fails the test."""
    for where in ("memory.text", "memory.save.input"):
        monkeypatch.setattr(f"{where}.redact", _must_not_run)
        monkeypatch.setattr(f"{where}.strip_protocol_tags", _must_not_run)


@override_settings(ATRIUM_MAX_CONTENT_CHARS=LIMIT)
def test_over_limit_content_is_refused_before_the_redactor_sees_it(save: Save, cleaning_refuses: None) -> None:
    with pytest.raises(InvalidInput) as refused:
        save("a" + " word" * (LIMIT // 5))  # LIMIT + 1 characters
    assert refused.value.message.startswith(f"content is at most {LIMIT} characters (got {LIMIT + 1})")
    assert refused.value.detail == {"field": "content"}
    assert Memory.objects.count() == 0 and not OpLog.objects.filter(op__startswith="memory.").exists()

    # Positive control: at the limit the same save goes on to the cleaning, which is patched to fail here.
    with pytest.raises(AssertionError, match="reached the cleaning"):
        save("a" + " word" * (LIMIT // 5 - 1) + "word")


@override_settings(ATRIUM_MAX_CONTENT_CHARS=LIMIT)
def test_text_within_the_limit_is_not_refused_when_redaction_lengthens_it(save: Save) -> None:
    """A redaction marker can be longer than what it replaces; the limit is the one the schemas state, on what
    was sent."""
    secret = "password=hunter2"
    content = ("The deploy host rotates keys nightly and logs " * 10)[: LIMIT - len(secret) - 1] + " " + secret
    assert len(content) == LIMIT
    result = save(content)
    assert result.memory is not None and result.redactions == ["password"]
    stored = Memory.objects.get(pk=result.memory.pk)
    assert "hunter2" not in stored.content and len(stored.content) > LIMIT
