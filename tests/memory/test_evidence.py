"""The evidence gate: sufficient only when claimed adequate, ≥1 valid ref of that batch and nextStrategy=answer."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from memory.evidence import batch_tag, evidence_assess, qualify_ref
from memory.models import Memory, SearchBatch
from memory.search import BATCH_KEEP
from palace.actors import Actor
from palace.errors import InvalidInput, NotFound
from palace.models import OpLog
from palace.selectors import palace_get

pytestmark = pytest.mark.django_db


def make_batch(user: Any, n: int = 3, *, palace_ids: list[int] | None = None) -> SearchBatch:
    palace = palace_get(user=user)
    ids = [Memory.objects.create(palace=palace, kind="fact", content=f"fact {i}").pk for i in range(n)]
    return SearchBatch.objects.create(
        handle="b_" + secrets.token_urlsafe(12),
        user=user,
        query="q",
        refs={f"r{i + 1}": pk for i, pk in enumerate(ids)},
        palace_ids=palace_ids if palace_ids is not None else [palace.pk],
    )


def assess(user: Any, batch: SearchBatch, refs: list[str], *, adequate: bool = True, strategy: str = "answer") -> Any:
    return evidence_assess(
        user=user,
        actor=Actor.for_user(user),
        batch=batch.handle,
        evidence_refs=refs,
        adequate=adequate,
        next_strategy=strategy,
        missing=[],
    )


def test_sufficient_needs_claim_valid_ref_and_answer(alice: Any) -> None:
    batch = make_batch(alice)
    verdict = assess(alice, batch, [qualify_ref(batch.handle, "r2")])
    assert verdict.sufficient and verdict.next_strategy == "answer"
    assert verdict.memory_ids == [batch.refs["r2"]]

    for kwargs in ({"adequate": False}, {"strategy": "retrieve"}, {"strategy": "ask_user"}):
        verdict = assess(alice, batch, ["r1"], **kwargs)
        assert not verdict.sufficient, kwargs
        assert verdict.next_strategy == "retrieve"
        assert verdict.reasons

    verdict = assess(alice, batch, [])
    assert not verdict.sufficient
    assert "no valid evidence ref" in verdict.reasons[0]


def test_refs_of_other_batches_are_rejected_and_listed(alice: Any) -> None:
    old = make_batch(alice)
    new = make_batch(alice)
    foreign = qualify_ref(old.handle, "r1")
    verdict = assess(alice, new, [foreign, "r9", "bogus"])
    assert not verdict.sufficient
    assert [r.ref for r in verdict.rejected] == [foreign, "r9", "bogus"]
    assert old.handle in verdict.rejected[0].reason
    assert "not a ref of batch" in verdict.rejected[1].reason

    # Still sufficient when at least one ref is valid; the foreign one stays listed.
    verdict = assess(alice, new, [foreign, qualify_ref(new.handle, "r3")])
    assert verdict.sufficient
    assert [r.ref for r in verdict.rejected] == [foreign]


def test_every_verdict_is_op_logged_on_the_batch_palace(alice: Any) -> None:
    batch = make_batch(alice)
    assess(alice, batch, ["r1"])
    assess(alice, batch, ["r1"], adequate=False)
    rows = list(OpLog.objects.filter(op="evidence.assess").order_by("pk"))
    assert [r.detail["verdict"] for r in rows] == ["sufficient", "insufficient"]
    assert rows[0].palace_id == batch.palace_ids[0]
    assert rows[1].reason.startswith("you did not claim")
    batch.refresh_from_db()
    assert batch.assessed

    multi = make_batch(alice, palace_ids=[batch.palace_ids[0], 999_999])
    assess(alice, multi, ["r1"])
    assert OpLog.objects.filter(op="evidence.assess").order_by("-pk").first().palace_id is None


def test_another_users_batch_answers_like_a_missing_one(alice: Any, charlie: Any) -> None:
    alices = make_batch(alice)
    assert assess(alice, alices, ["r1"]).sufficient  # positive control
    with pytest.raises(NotFound):
        assess(charlie, alices, ["r1"])
    assert not OpLog.objects.filter(op="evidence.assess", actor_user=charlie).exists()


def test_only_the_latest_batches_may_be_cited(alice: Any) -> None:
    first = make_batch(alice, n=1)
    for _ in range(BATCH_KEEP):
        make_batch(alice, n=1)
    with pytest.raises(NotFound, match="run memory_search again"):
        assess(alice, first, ["r1"])


def test_input_limits(alice: Any) -> None:
    batch = make_batch(alice)
    with pytest.raises(InvalidInput):
        assess(alice, batch, [f"r{i}" for i in range(9)])
    with pytest.raises(InvalidInput):
        assess(alice, batch, ["r1"], strategy="guess")
    with pytest.raises(InvalidInput):
        evidence_assess(
            user=alice,
            actor=Actor.for_user(alice),
            batch=batch.handle,
            evidence_refs=["r1"],
            adequate=True,
            next_strategy="answer",
            missing=["x" * 501],
        )


def test_batch_tag_is_short_and_stable() -> None:
    assert batch_tag("b_abcdefghijkl") == "abcdef"
    assert qualify_ref("b_abcdefghijkl", "r3") == "r3.abcdef"
