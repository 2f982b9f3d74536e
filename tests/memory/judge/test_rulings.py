"""The judge on the write pipeline's fuzzy band: the rules with no model, the model through the fake
OpenAI-compatible server, every failure falling back to the rules with a labelled reason, and the records."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.judge import (
    Disposition,
    Neighbour,
    judge_config,
    judge_settings_public,
    judge_settings_update,
    judge_test_connection,
)
from memory.judge.config import thresholds
from memory.judge.prompt import JudgeReply
from memory.judge.rulings import Judged, Ruling, adjudications_record
from memory.models import Adjudication, Edge, JudgeSettings, Memory
from memory.save import SaveResult
from palace.actors import Actor
from palace.errors import InvalidInput, PermissionDenied
from palace.models import OpLog, Palace
from tests.fakes.openai_server import CHAT_PATH, FakeOpenAI, chat_json, drop_connection, http_error, raw_body, slow

Save = Callable[..., SaveResult]
OLD = "The API server listens on port 8000."
NEW = "The API server listens on port 8001."
KEY = "sk-test-1234567890abcd"


@pytest.fixture
def root(make_user: Callable[..., Any]) -> Actor:
    return Actor.for_user(make_user("root", admin=True))


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def judge_on(root: Actor, fake: FakeOpenAI) -> FakeOpenAI:
    judge_settings_update(
        actor=root, enabled=True, base_url=fake.base_url, model="judge-1", timeout_ms=1000, api_key=KEY
    )
    return fake


def _pair(save: Save, *, reply: Any = None, fake: FakeOpenAI | None = None) -> tuple[SaveResult, SaveResult]:
    first = save(OLD, placard="API port")
    if fake is not None and reply is not None:
        fake.script_chat([reply])
    return first, save(NEW, placard="API port")


# --- the rules (no model) ---------------------------------------------------------------------------------------


def test_without_a_model_the_rules_defer_and_the_record_says_why(save: Save) -> None:
    first, second = _pair(save)
    assert first.memory is not None and second.memory is not None
    assert second.disposition == "defer" and second.contradicts == [first.memory.pk]
    edge = Edge.objects.get(kind="contradicts")
    assert second.edges == [edge.pk]
    record = Adjudication.objects.get()
    assert (record.verdict, record.contradiction, record.model_took_part) == ("defer", True, False)
    assert record.fallback_reason == "off" and record.p_same is None
    assert (record.new_memory_id, record.neighbour_id, record.edge_id) == (second.memory.pk, first.memory.pk, edge.pk)
    assert "+8001" in record.reason and "-8000" in record.reason
    # The hint answers "why?" from the record and names the real tool and edge.
    assert f"memory_resolve (edge={edge.pk}" in second.hint and "judged by the rules (off)" in second.hint
    assert "dismiss the edge" not in second.hint


def test_the_rules_path_asks_no_model_and_records_nothing_for_an_accept(save: Save, fake: FakeOpenAI) -> None:
    save("We deploy on Fridays.")
    assert save("Alice prefers green tea in the morning.").disposition == "accept"
    assert Adjudication.objects.count() == 0 and fake.requests_to(CHAT_PATH) == []


# --- the model ---------------------------------------------------------------------------------------------------


def test_a_confirmed_contradiction_gets_an_edge_and_the_models_reason(save: Save, judge_on: FakeOpenAI) -> None:
    reply = chat_json({"same": 0.05, "contradicts": 0.93, "reason": "different port numbers"})
    first, second = _pair(save, reply=reply, fake=judge_on)
    assert second.disposition == "defer" and len(second.edges) == 1
    record = Adjudication.objects.get()
    assert record.model_took_part and record.model_name == "judge-1" and record.fallback_reason == ""
    assert (record.p_same, record.p_contradiction, record.reason) == (0.05, 0.93, "different port numbers")
    assert "judged by model judge-1 (same 0.05, contradicts 0.93" in second.hint
    sent = judge_on.requests_to(CHAT_PATH)[0]
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert OLD in sent.json["messages"][1]["content"] and NEW in sent.json["messages"][1]["content"]


MERGE_AT = thresholds().merge_at  # ATRIUM_JUDGE_MERGE_AT, 0.85 by default


@pytest.mark.parametrize(
    ("same", "merged"),
    [
        (round(MERGE_AT - 0.01, 2), False),  # just below: deferred, both memories kept
        (MERGE_AT, True),  # at the threshold: merged
        (round(min(1.0, MERGE_AT + 0.05), 2), True),  # above it
    ],
)
def test_the_model_merges_a_restatement_from_the_merge_threshold_up(
    save: Save, judge_on: FakeOpenAI, same: float, merged: bool
) -> None:
    first, second = _pair(save, reply=chat_json({"same": same, "contradicts": 0.0, "reason": "typo"}), fake=judge_on)
    assert first.memory is not None
    record = Adjudication.objects.get()
    assert record.p_same == same and not Edge.objects.exists()
    if merged:
        assert second.disposition == "merge" and second.merged_into == first.memory.pk
        assert Memory.objects.count() == 1
        assert record.verdict == "merge" and record.new_memory_id is None and record.new_text == NEW
    else:
        assert second.disposition == "defer" and second.merged_into is None and second.memory is not None
        assert Memory.objects.count() == 2 and record.verdict == "defer"


@pytest.mark.parametrize(
    ("same", "contradicts", "disposition", "edge"),
    [
        (0.15, 0.1, "accept", False),  # at accept_at: distinct, compatible
        (0.5, 0.5, "defer", False),  # unsure: deferred, but no contradiction confirmed
        (0.3, 0.79, "defer", False),  # just below contradiction_at: no edge
        (0.3, 0.8, "defer", True),  # at contradiction_at: an edge
        (0.84, 0.0, "defer", False),  # just below merge_at
    ],
)
def test_the_three_thresholds(
    save: Save, judge_on: FakeOpenAI, same: float, contradicts: float, disposition: str, edge: bool
) -> None:
    reply = chat_json({"same": same, "contradicts": contradicts, "reason": "r"})
    _, second = _pair(save, reply=reply, fake=judge_on)
    assert second.disposition == disposition
    assert Memory.objects.count() == 2
    assert Edge.objects.filter(kind="contradicts").exists() is edge
    assert Adjudication.objects.get().contradiction is edge


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        (http_error(500), "failed"),
        (http_error(401, message="bad key"), "failed"),
        (drop_connection(), "failed"),
        (raw_body("<html>proxy error</html>"), "failed"),
        (chat_json({"same": 3, "contradicts": 0.1, "reason": "x"}), "failed"),  # out of range
        (chat_json({"verdict": "same"}), "failed"),  # wrong schema
        (slow(1.6, chat_json({"same": 0.9, "contradicts": 0, "reason": "late"})), "timeout"),
    ],
)
def test_every_failure_falls_back_to_the_rules_with_a_labelled_reason(
    save: Save, judge_on: FakeOpenAI, behaviour: Any, reason: str
) -> None:
    _, second = _pair(save, reply=behaviour, fake=judge_on)
    assert second.disposition == "defer" and len(second.edges) == 1  # today's behaviour, never blocked
    record = Adjudication.objects.get()
    assert not record.model_took_part and record.fallback_reason == reason
    assert f"judged by the rules ({reason})" in second.hint and "[model " in record.reason
    assert KEY not in record.reason and KEY not in second.hint


def test_after_a_failure_the_other_suspects_are_not_asked(save: Save, judge_on: FakeOpenAI) -> None:
    save("The API server listens on port 8000.")
    judge_on.script_chat([chat_json({"same": 0.1, "contradicts": 0.1, "reason": "another environment"})])
    assert save("The API server listens on port 8002.").disposition == "accept"
    asked = len(judge_on.requests_to(CHAT_PATH))
    judge_on.script_chat([http_error(500), chat_json({"same": 0.9, "contradicts": 0, "reason": "never asked"})])
    result = save("The API server listens on port 8001.")
    reasons = list(Adjudication.objects.filter(new_memory=result.memory).values_list("fallback_reason", flat=True))
    assert sorted(reasons) == ["failed", "skipped"] and len(judge_on.requests_to(CHAT_PATH)) == asked + 1
    assert result.disposition == "defer" and len(result.edges) == 2


def test_a_changed_setting_takes_effect_on_the_next_save(save: Save, root: Actor, fake: FakeOpenAI) -> None:
    save(OLD)
    save(NEW)
    assert Adjudication.objects.get().fallback_reason == "off"
    judge_settings_update(actor=root, enabled=True, base_url=fake.base_url, model="m2", timeout_ms=2000, api_key=KEY)
    fake.script_chat([chat_json({"same": 0.0, "contradicts": 0.99, "reason": "ports differ"})])
    save("The API server listens on port 8003.")
    # both earlier ports are suspects now (a changed number); the model is asked about the nearest first
    newest = Adjudication.objects.filter(new_text__contains="8003").order_by("id").first()
    assert newest is not None and newest.model_took_part and newest.model_name == "m2"


# --- settings ----------------------------------------------------------------------------------------------------


def test_turning_the_judge_on_without_a_key_leaves_it_off(root: Actor, fake: FakeOpenAI, save: Save) -> None:
    shown = judge_settings_update(actor=root, enabled=True, base_url=fake.base_url, model="m", timeout_ms=3000)
    assert shown["enabled"] is False and shown["active"] is False and judge_config().off_reason == "off"
    _pair(save)
    assert fake.requests_to(CHAT_PATH) == [] and Adjudication.objects.get().fallback_reason == "off"
    # Positive control: with a key it is on.
    shown = judge_settings_update(
        actor=root, enabled=True, base_url=fake.base_url, model="m", timeout_ms=3000, api_key=KEY
    )
    assert shown["enabled"] is True and shown["active"] is True


def test_the_key_is_stored_encrypted_and_only_ever_shown_masked(root: Actor, fake: FakeOpenAI) -> None:
    shown = judge_settings_update(
        actor=root, enabled=True, base_url=fake.base_url, model="m", timeout_ms=3000, api_key=KEY
    )
    row = JudgeSettings.objects.get()
    assert KEY not in row.api_key_encrypted and KEY not in str(shown)
    assert shown["api_key_mask"].endswith("abcd") and shown["api_key_set"] is True
    # An empty key field keeps the stored key; a short key shows none of its characters.
    judge_settings_update(actor=root, enabled=True, base_url=fake.base_url, model="m", timeout_ms=3000)
    assert judge_config().llm is not None and judge_config().llm.api_key == KEY  # type: ignore[union-attr]
    shown = judge_settings_update(
        actor=root, enabled=True, base_url=fake.base_url, model="m", timeout_ms=3000, api_key="short123"
    )
    assert shown["api_key_mask"] == "••••••••" and "123" not in shown["api_key_mask"]
    shown = judge_settings_update(
        actor=root, enabled=True, base_url=fake.base_url, model="m", timeout_ms=3000, clear_key=True
    )
    assert shown["api_key_set"] is False and shown["enabled"] is False
    op = OpLog.objects.filter(op="judge.settings").latest("id")
    assert KEY not in str(op.detail) and op.detail["key_changed"] is True


def test_a_key_that_cannot_be_decrypted_falls_back_labelled(root: Actor, fake: FakeOpenAI, settings: Any) -> None:
    judge_settings_update(actor=root, enabled=True, base_url=fake.base_url, model="m", timeout_ms=3000, api_key=KEY)
    assert judge_config().llm is not None
    settings.SECRET_KEY = "another-secret-key-entirely-" * 2
    assert judge_config().llm is None and judge_config().off_reason == "key_unreadable"


@pytest.mark.parametrize("timeout_ms", [999, 60001])
def test_timeout_out_of_range_is_refused(root: Actor, timeout_ms: int) -> None:
    with pytest.raises(InvalidInput):
        judge_settings_update(actor=root, enabled=False, base_url="", model="", timeout_ms=timeout_ms)
    judge_settings_update(actor=root, enabled=False, base_url="", model="", timeout_ms=60000)  # positive control


def test_only_an_admin_may_change_or_test_the_settings(alice: Any, root: Actor, fake: FakeOpenAI) -> None:
    args = {"base_url": fake.base_url, "model": "m", "timeout_ms": 3000}
    with pytest.raises(PermissionDenied):
        judge_settings_update(actor=Actor.for_user(alice), enabled=True, api_key=KEY, **args)
    with pytest.raises(PermissionDenied):
        judge_test_connection(actor=Actor.for_user(alice), **args)
    assert judge_settings_update(actor=root, enabled=True, api_key=KEY, **args)["enabled"] is True


def test_test_connection_uses_the_values_as_typed_and_stores_nothing(root: Actor, fake: FakeOpenAI) -> None:
    fake.script_chat([chat_json({"same": 0.95, "contradicts": 0.0, "reason": "same"})])
    report = judge_test_connection(
        actor=root, base_url=fake.base_url, model="typed-model", timeout_ms=2000, api_key=KEY
    )
    assert report.reachable and report.model == "typed-model" and report.elapsed_ms >= 0 and report.error == ""
    assert fake.requests_to(CHAT_PATH)[0].json["model"] == "typed-model"
    assert judge_settings_public()["model"] == "" and not JudgeSettings.objects.get().api_key_encrypted
    fake.script_chat([http_error(503)])
    failed = judge_test_connection(actor=root, base_url=fake.base_url, model="m", timeout_ms=2000, api_key=KEY)
    assert not failed.reachable and "503" in failed.error and KEY not in failed.error
    unreachable = judge_test_connection(actor=root, base_url="http://127.0.0.1:9/v1", model="m", timeout_ms=1000)
    assert not unreachable.reachable and unreachable.error


# --- the record's bound ------------------------------------------------------------------------------------------


def test_records_beyond_the_bound_are_pruned_per_palace(
    alice_palace: Palace, project: Palace, settings: Any, save: Save
) -> None:
    settings.ATRIUM_JUDGE_KEEP = 50
    first = save(OLD)
    assert first.memory is not None
    n = Neighbour(id=first.memory.pk, kind="fact", content=OLD, placard="", similarity=0.96)
    ruling = Ruling(neighbour=n, verdict="defer", contradiction=True, reason="r", fallback_reason="off")
    judged = Judged(Disposition("defer", contradicts=(n,)), (ruling,))
    adjudications_record(palace=project, judged=judged, new_memory=None, new_text="p", edges={})
    for _ in range(55):
        with CaptureQueriesContext(connection) as queries:
            adjudications_record(palace=alice_palace, judged=judged, new_memory=None, new_text="x", edges={})
    assert Adjudication.objects.filter(palace=alice_palace).count() == 50
    assert Adjudication.objects.filter(palace=project).count() == 1  # another palace's records are its own
    # One statement that looks each old ruling's edge up by its key: the edge join Django turned into
    # "id IN (SELECT ...)" ran for minutes as a nested loop on rows PostgreSQL's statistics had not seen.
    deletes = [q["sql"] for q in queries if q["sql"].startswith("DELETE")]
    assert len(deletes) == 1 and "NOT EXISTS" in deletes[0] and " IN (SELECT" not in deletes[0], deletes


def test_pruning_keeps_every_ruling_an_open_contradiction_points_to(
    alice_palace: Palace, settings: Any, save: Save
) -> None:
    settings.ATRIUM_JUDGE_KEEP = 50
    old, new = save(OLD).memory, save(NEW).memory
    later = save("The staging database runs on the old cron box.").memory
    assert old is not None and new is not None and later is not None
    open_edge = Edge.objects.get(kind="contradicts", status="pending", from_memory=new, to_memory=old)
    decided = Edge.objects.create(
        palace=alice_palace, from_memory=later, to_memory=old, kind="contradicts", status="dismissed"
    )
    Adjudication.objects.all().delete()  # start from these three rulings only, the oldest of the palace
    n = Neighbour(id=old.pk, kind="fact", content=OLD, placard="", similarity=0.96)
    ruling = Ruling(neighbour=n, verdict="defer", contradiction=True, reason="r", fallback_reason="off")
    judged = Judged(Disposition("defer", contradicts=(n,)), (ruling,))
    behind_open, behind_decided, behind_none = (
        adjudications_record(palace=alice_palace, judged=judged, new_memory=None, new_text=t, edges=e)[0]
        for t, e in (("open", {old.pk: open_edge}), ("decided", {old.pk: decided}), ("none", {}))
    )
    for _ in range(55):  # the three are now far beyond the bound
        adjudications_record(palace=alice_palace, judged=judged, new_memory=None, new_text="x", edges={})

    kept = set(Adjudication.objects.filter(palace=alice_palace).values_list("pk", flat=True))
    assert behind_open.pk in kept  # an open edge's ruling stays, however old
    assert behind_decided.pk not in kept and behind_none.pk not in kept  # the others beyond the bound are pruned
    assert len(kept) == 51  # the newest 50, and the one the open edge points to

    # Decided, the same edge's ruling is pruned like any other.
    Edge.objects.filter(pk=open_edge.pk).update(status="confirmed")
    adjudications_record(palace=alice_palace, judged=judged, new_memory=None, new_text="x", edges={})
    assert not Adjudication.objects.filter(pk=behind_open.pk).exists()
    assert Adjudication.objects.filter(palace=alice_palace).count() == 50


def test_reply_model_bounds() -> None:
    assert JudgeReply(same=1, contradicts=0).reason == ""


# --- the model's wider reach (facts, not episodes) --------------------------------------------------------------


def test_the_model_vets_a_rules_merge_that_hides_a_reversal(save: Save, judge_on: FakeOpenAI) -> None:
    first = save("Alice prefers tabs over spaces.", kind="preference")
    judge_on.script_chat([chat_json({"same": 0.03, "contradicts": 0.94, "reason": "preference reversed"})])
    second = save("Alice prefers spaces over tabs.", kind="preference")
    assert first.memory is not None
    assert second.disposition == "defer" and second.contradicts == [first.memory.pk] and len(second.edges) == 1
    assert "preference reversed" in second.hint


def test_without_a_model_the_same_reversal_is_merged_as_today(save: Save) -> None:
    save("Alice prefers tabs over spaces.", kind="preference")
    assert save("Alice prefers spaces over tabs.", kind="preference").disposition == "merge"
    assert Adjudication.objects.count() == 0  # a rules merge is not an adjudication


def test_the_model_is_asked_below_the_rules_band_for_facts_but_not_for_episodes(
    save: Save, judge_on: FakeOpenAI
) -> None:
    save("Bob is allergic to peanuts.")
    judge_on.script_chat([chat_json({"same": 0.02, "contradicts": 0.96, "reason": "negation"})])
    fact = save("Bob is not allergic to peanuts.")  # e5 cosine ~0.93: below the rules' 0.95 band
    assert fact.disposition == "defer" and len(fact.edges) == 1
    asked = len(judge_on.requests_to(CHAT_PATH))
    save("I went hiking with my sister last weekend.", kind="episode", speaker="Caroline")
    save("I went swimming with my sister last weekend.", kind="episode", speaker="Caroline")
    assert len(judge_on.requests_to(CHAT_PATH)) == asked  # turns of a conversation cost no model calls
