"""The write pipeline end to end: dispositions, redaction, tag stripping, the embedder-down path."""

from __future__ import annotations

from collections.abc import Callable

from memory.models import Memory
from memory.services import SaveResult
from palace.models import OpLog


def test_fresh_content_is_accepted_slotted_and_logged(save: Callable[..., SaveResult]) -> None:
    result = save("The API server listens on port 8000.", placard="API port")
    assert result.disposition == "accept"
    memory = Memory.objects.get(pk=result.memory.pk)
    assert memory.embedding is not None
    assert memory.slot is not None
    op = OpLog.objects.get(op="memory.save", target_id=memory.pk)
    assert op.detail["disposition"] == "accept"


def test_restatement_merges(save: Callable[..., SaveResult]) -> None:
    first = save("The API server listens on port 8000.")
    again = save("The API server runs on port 8000.")
    assert again.disposition == "merge", again
    other = save("The API server listens on port 8001.")
    assert other.disposition != "merge", other
    assert Memory.objects.count() == 2
    assert first.memory is not None
