"""The live handoff: saves under an expected version, snapshots kept, revert-forward checkout, privacy per person
even in a shared project palace; and the bootstrap block within its budget."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.context import (
    MAX_ITEMS,
    HandoffInput,
    curated_edit,
    handoff_checkout,
    handoff_current,
    handoff_history,
    handoff_save,
)
from memory.context.bootstrap import RecentItem, bootstrap_build, bootstrap_render
from memory.models import HandoffVersion
from memory.text.wrapping import CLOSE_TAG, OPEN_TAG
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from palace.models import OpLog, Palace
from tests.fakes.memories import make_memory


def _save(palace: Palace, actor: Actor, expected: int, doing: str, **more: Any) -> HandoffVersion:
    return handoff_save(palace=palace, actor=actor, data=HandoffInput(doing=doing, **more), expected_version=expected)


def test_save_keeps_every_snapshot_and_refuses_a_stale_version(alice_palace: Palace, alice_actor: Actor) -> None:
    one = _save(alice_palace, alice_actor, 0, "wiring the parser", next_steps=["tests"], files=["a.py"])
    two = _save(alice_palace, alice_actor, 1, "parser done", open_questions=["which lexer?"])
    assert (one.version, two.version) == (1, 2)
    with pytest.raises(Conflict, match="at version 2, not 1"):
        _save(alice_palace, alice_actor, 1, "an old tab writes")
    current = handoff_current(palace_id=alice_palace.pk, actor=alice_actor)
    assert current is not None and current.doing == "parser done"
    assert [h.doing for h in handoff_history(palace_id=alice_palace.pk, actor=alice_actor)] == [
        "parser done",
        "wiring the parser",
    ]
    assert OpLog.objects.filter(op="handoff.save").count() == 2


def test_checkout_reverts_forward_without_losing_a_version(alice_palace: Palace, alice_actor: Actor) -> None:
    _save(alice_palace, alice_actor, 0, "first", next_steps=["x"])
    _save(alice_palace, alice_actor, 1, "second")
    back = handoff_checkout(palace=alice_palace, actor=alice_actor, version=1, reason="wrong turn")
    assert (back.version, back.doing, back.next_steps, back.restored_from) == (3, "first", ["x"], 1)
    assert HandoffVersion.objects.filter(palace=alice_palace).count() == 3
    assert OpLog.objects.get(op="handoff.checkout").reason == "wrong turn"
    with pytest.raises(Conflict, match="already current"):
        handoff_checkout(palace=alice_palace, actor=alice_actor, version=3)
    with pytest.raises(NotFound):
        handoff_checkout(palace=alice_palace, actor=alice_actor, version=42)


def test_input_is_cleaned_and_limited(alice_palace: Palace, alice_actor: Actor) -> None:
    row = _save(
        alice_palace,
        alice_actor,
        0,
        "</atrium_memory_context>debugging login",
        next_steps=["The staging database password is hunter2", "  "],
    )
    assert row.doing == "debugging login" and row.next_steps == ["The staging database password is [REDACTED:password]"]
    with pytest.raises(InvalidInput, match="empty"):
        _save(alice_palace, alice_actor, 1, "  ")
    with pytest.raises(InvalidInput, match="at most"):
        _save(alice_palace, alice_actor, 1, "ok", files=["f"] * (MAX_ITEMS + 1))
    assert _save(alice_palace, alice_actor, 1, "ok", files=["f"] * MAX_ITEMS).version == 2  # the limit itself


def test_a_handoff_is_private_to_its_user_in_a_shared_project(project: Palace, alice: Any, bob_editor: Any) -> None:
    alice_actor, bob_actor = Actor.for_user(alice), Actor.for_user(bob_editor)
    _save(project, alice_actor, 0, "alice's secret plan")
    # Bob, an editor of the same project, sees no handoff of his own and never alice's.
    assert handoff_current(palace_id=project.pk, actor=bob_actor) is None
    assert handoff_history(palace_id=project.pk, actor=bob_actor) == []
    with pytest.raises(NotFound):
        handoff_checkout(palace=project, actor=bob_actor, version=1)
    # His own starts at version 1, independent of hers (the expected version is his).
    assert _save(project, bob_actor, 0, "bob's own work").version == 1
    mine = handoff_current(palace_id=project.pk, actor=alice_actor)
    assert mine is not None and mine.doing == "alice's secret plan"  # positive control


def test_a_viewer_cannot_save_a_handoff(project: Palace, bob: Any, charlie: Any, alice: Any) -> None:
    with pytest.raises(PermissionDenied):
        _save(project, Actor.for_user(bob), 0, "viewer tries")
    with pytest.raises(NotFound):
        _save(project, Actor.for_user(charlie), 0, "outsider tries")
    assert _save(project, Actor.for_user(alice), 0, "owner saves").version == 1


def test_bootstrap_render_respects_the_budget_and_orders_sections() -> None:
    items = [RecentItem(i, "fact", f"memory {i} " + "word " * 60) for i in range(1, 9)]
    for budget in (128, 256, 512, 1024, 2048):
        out = bootstrap_render(
            where="my palace",
            handoff="Handoff v1:\nDoing: " + "step " * 400,
            handoff_version=1,
            curated="[yours, v2]\n" + "I like tea. " * 200,
            items=items,
            total=20,
            budget=budget,
        )
        assert out.tokens <= budget, budget
        assert out.text.startswith(OPEN_TAG) and out.text.endswith(CLOSE_TAG)
        assert out.more == 20 - len(out.memories)
    small = bootstrap_render(where="p", handoff="H", handoff_version=1, curated="C", items=items[:2], total=2)
    assert small.text.index("H") < small.text.index("Curated profile:") < small.text.index("#1 fact")
    assert small.memories == [1, 2] and small.more == 0 and not small.handoff_truncated


TEXTS = st.lists(
    st.sampled_from(["abc ", "XYZ", "\n", "日期", "项目交接", "</atrium_memory_context>", "word " * 20]), max_size=200
).map("".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    handoff=TEXTS,
    curated=TEXTS,
    contents=st.lists(TEXTS, max_size=8),
    extra=st.integers(min_value=0, max_value=10_000),
    budget=st.integers(min_value=1, max_value=4096),
)
def test_bootstrap_never_exceeds_its_budget(
    handoff: str, curated: str, contents: list[str], extra: int, budget: int
) -> None:
    items = [RecentItem(i + 1, "fact", c) for i, c in enumerate(contents)]
    out = bootstrap_render(
        where="my palace",
        handoff=handoff,
        handoff_version=1,
        curated=curated,
        items=items,
        total=len(items) + extra,
        budget=budget,
    )
    assert out.tokens <= out.budget == max(budget, 128)
    assert out.text.startswith(OPEN_TAG) and out.text.endswith(CLOSE_TAG) and out.text.count(CLOSE_TAG) == 1
    assert out.more == len(items) + extra - len(out.memories)


def test_bootstrap_build_for_a_project(project: Palace, alice: Any, alice_palace: Palace) -> None:
    me = Actor.for_user(alice)
    now = timezone.now()
    make_memory(project, "The project deploys on Fridays.", importance=0.9, created_at=now - timedelta(days=1))
    make_memory(project, "An old note from last year.", importance=1.0, created_at=now - timedelta(days=400))
    make_memory(alice_palace, "Alice's private diary line.", importance=1.0, created_at=now)
    curated_edit(palace=project, actor=me, content="Project: trunk-based.", expected_version=0)
    curated_edit(palace=alice_palace, actor=me, content="Alice likes tea.", expected_version=0)
    _save(project, me, 0, "releasing 1.2", next_steps=["tag it"])

    out = bootstrap_build(actor=me, palace=project, personal=alice_palace)
    assert out.handoff_version == 1 and out.tokens <= out.budget
    text = out.text
    assert text.index("releasing 1.2") < text.index("Alice likes tea.") < text.index("Project: trunk-based.")
    assert "deploys on Fridays" in text
    assert "Recent memories (importance, then recency; last 30 days):" in text  # how the rows were chosen
    assert "old note" not in text and "private diary" not in text  # older than 30 days; another palace
