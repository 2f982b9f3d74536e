"""Isolation through every palace-touching tool (charlie vs alice, each negative beside a positive control), read
tokens, the user from the token only, and the honesty of search labels and the degraded marker."""

from __future__ import annotations

from typing import Any

import pytest

from api.mcp.server import WRITE_TOOLS
from memory.models import AccessRecord, Memory, SearchBatch
from palace.models import OpLog
from tests.api.mcp.conftest import MODES, run, text_of
from tests.api.mcp.conftest import call_each as _calls  # the shared helper, under the name this module's tests use
from tests.conftest import PROJECT_ORIGIN

SECRET = "Alice's launch codename is Bluebird and ships in March."


def _seed(token: str, project: bool = False) -> dict[str, Any]:
    args: dict[str, Any] = {"content": SECRET, "kind": "fact", "placard": "launch codename"}
    if project:
        args["project"] = PROJECT_ORIGIN
    saved, related, found = run(
        _calls(
            token,
            [
                ("memory_save", args),
                (
                    "memory_save",
                    {"content": "Bluebird's launch checklist lives in the ops wiki.", "kind": "fact"}
                    | ({"project": PROJECT_ORIGIN} if project else {}),
                ),
                ("memory_search", {"query": "launch codename Bluebird"}),
            ],
        )
    )
    assert not saved.is_error, text_of(saved)
    memory_id = saved.structured_content["items"][0]["id"]
    return {
        "id": memory_id,
        "other": related.structured_content["items"][0]["id"],
        "batch": found.structured_content["batchId"],
        "ref": found.structured_content["hits"][0]["ref"],
    }


def _by_id(memory_id: int, other: int, batch: str, ref: str, project: str | None) -> list[tuple[str, dict[str, Any]]]:
    """Every tool call that names alice's memory, batch or palace."""
    where = {"project": project} if project else {}
    return [
        ("memory_examine", {"ids": [memory_id]}),
        ("memory_review", {"id": memory_id}),
        ("memory_neighbors", {"id": memory_id, "hops": 3}),
        ("memory_update", {"id": memory_id, "content": "Bluebird was renamed to Kestrel by someone else."}),
        ("memory_report", {"id": other, "outcome": "failure"}),
        ("memory_report", {"id": other, "grade": 1}),
        ("memory_forget", {"id": other, "reason": "hostile"}),
        ("memory_assess", {"batchId": batch, "evidenceRefs": [ref], "adequate": True, "nextStrategy": "answer"}),
        ("memory_search", {"query": "launch codename Bluebird", **where}),
        ("memory_timeline", where),
        ("memory_timeline", {"order": "tour", **where}),
        ("memory_tour", where),
        ("memory_tour", {"mode": "thematic", "theme": "launch codename", **where}),
        ("memory_stats", where),
        ("memory_review_queue", where),
        ("memory_audit_forgotten", where),
        ("memory_distill", {"mode": "suggest", **where}),
        ("memory_profile", {}),
        ("memory_episode_timeline", {"around": memory_id, **where}),
    ]


def _leaks(result: Any) -> bool:
    """Whether alice's memories (not just the words of the query) show up in a result."""
    seen = text_of(result) + str(result.structured_content)
    return "ships in March" in seen or "lives in the ops wiki" in seen


@pytest.mark.parametrize("mode", MODES)
def test_charlie_cannot_reach_alices_personal_memories_through_any_tool(
    tokens: dict[str, str], mode: str, settings: Any
) -> None:
    settings.ATRIUM_REVIEW_FIRST_DUE_DAYS = 0
    seeded = _seed(tokens["alice"])
    calls = _by_id(seeded["id"], seeded["other"], seeded["batch"], seeded["ref"], None)

    charlie = run(_calls(tokens["charlie"], calls, mode))
    for (name, args), result in zip(calls, charlie, strict=True):
        assert not _leaks(result), (name, args, text_of(result))
        if "id" in args or name == "memory_assess":
            assert result.is_error, (name, text_of(result))
            assert "not found" in text_of(result).lower(), (name, text_of(result))
    examined = charlie[0]
    assert not examined.is_error and examined.structured_content["notFound"] == [seeded["id"]]
    assert Memory.objects.get(pk=seeded["id"]).status == "active"
    assert Memory.objects.get(pk=seeded["other"]).status == "active"
    assert not Memory.objects.filter(content__contains="Kestrel").exists()

    # Positive control: the same read calls as alice see her memory.
    reads = [c for c in calls if c[0] not in WRITE_TOOLS]
    alice = dict(
        zip([f"{n}{i}" for i, (n, _) in enumerate(reads)], run(_calls(tokens["alice"], reads, mode)), strict=True)
    )
    seen = ("memory_examine0", "memory_review1", "memory_search4", "memory_timeline5", "memory_profile12")
    for key in (*seen, "memory_episode_timeline13"):  # the around anchor is alice's memory
        assert _leaks(alice[key]), (key, text_of(alice[key]))


def test_outsider_and_project_palaces_answer_like_nonexistent(
    tokens: dict[str, str], project: Any, settings: Any
) -> None:
    settings.ATRIUM_REVIEW_FIRST_DUE_DAYS = 0
    seeded = _seed(tokens["alice"], project=True)
    assert Memory.objects.get(pk=seeded["id"]).palace_id == project.pk
    calls = _by_id(seeded["id"], seeded["other"], seeded["batch"], seeded["ref"], PROJECT_ORIGIN)
    charlie = run(_calls(tokens["charlie"], calls))
    nowhere = run(_calls(tokens["charlie"], [("memory_stats", {"project": "github.com/atrium-test/does-not-exist"})]))
    missing_text = text_of(nowhere[0]).replace("does-not-exist", "demo")
    for (name, args), result in zip(calls, charlie, strict=True):
        assert not _leaks(result), (name, text_of(result))
        if "project" in args:
            assert result.is_error, (name, text_of(result))
            # Exactly the answer a project that does not exist gets.
            assert text_of(result).replace(PROJECT_ORIGIN, "github.com/atrium-test/demo") == missing_text.replace(
                "memory_stats", name
            ), name

    # Charlie cannot save into the project either; alice (owner) can.
    save = {"content": "Charlie's note about Bluebird.", "kind": "fact", "project": PROJECT_ORIGIN}
    assert run(_calls(tokens["charlie"], [("memory_save", save)]))[0].is_error
    assert not Memory.objects.filter(content__startswith="Charlie").exists()
    alice = run(_calls(tokens["alice"], [("memory_stats", {"project": PROJECT_ORIGIN})]))[0]
    assert not alice.is_error and alice.structured_content["total"] == 2


def test_project_viewer_reads_but_cannot_write(tokens: dict[str, str], project: Any, bob: Any, token_for: Any) -> None:
    seeded = _seed(tokens["alice"], project=True)
    bob_token = token_for(bob)
    read, update, save = run(
        _calls(
            bob_token,
            [
                ("memory_search", {"query": "launch codename Bluebird", "project": PROJECT_ORIGIN}),
                ("memory_update", {"id": seeded["id"], "content": "Bob rewrote the Bluebird launch codename."}),
                ("memory_save", {"content": "Bob's idea about the launch.", "kind": "fact", "project": PROJECT_ORIGIN}),
            ],
        )
    )
    assert _leaks(read)
    assert update.is_error and "read-only" in text_of(update)
    assert save.is_error and "read-only" in text_of(save)
    assert Memory.objects.filter(palace=project).count() == 2


@pytest.mark.parametrize("mode", MODES)
def test_read_token_cannot_call_write_tools(tokens: dict[str, str], mode: str) -> None:
    seeded = _seed(tokens["alice"])
    before = (Memory.objects.count(), OpLog.objects.count())
    writes = [
        ("memory_save", {"content": "A read token tries to write this.", "kind": "fact"}),
        ("memory_update", {"id": seeded["id"], "content": "A read token rewrites the codename."}),
        ("memory_forget", {"id": seeded["id"]}),
        ("memory_restore", {"id": seeded["id"]}),
        ("memory_report", {"id": seeded["id"], "outcome": "success"}),
        ("memory_distill", {"mode": "apply"}),
        ("memory_checkout", {"id": seeded["id"]}),
        ("memory_distill_undo", {"id": seeded["id"]}),
        ("memory_resolve", {"edge": 1, "decision": "both_stand", "reason": "a read token decides"}),
        ("memory_profile_edit", {"action": "edit", "content": "A read token edits.", "expected_version": 0}),
        ("memory_handoff_save", {"doing": "A read token saves.", "expected_version": 0}),
        ("memory_ingest_history", {"paths": ["/nowhere"], "run": True}),
    ]
    assert {name for name, _ in writes} == WRITE_TOOLS
    results = run(_calls(tokens["alice_read"], writes, mode))
    for (name, _), result in zip(writes, results, strict=True):
        assert result.is_error, name
        assert "read scope" in text_of(result), (name, text_of(result))
    assert (Memory.objects.count(), OpLog.objects.count()) == before
    # The read token still reads (positive control) and may use the evidence gate.
    search, assess = run(
        _calls(
            tokens["alice_read"],
            [
                ("memory_search", {"query": "launch codename Bluebird"}),
                (
                    "memory_assess",
                    {
                        "batchId": seeded["batch"],
                        "evidenceRefs": [seeded["ref"]],
                        "adequate": True,
                        "nextStrategy": "answer",
                    },
                ),
            ],
            mode,
        )
    )
    assert _leaks(search)
    assert assess.structured_content["verdict"] == "sufficient"


def test_the_user_comes_from_the_token_not_from_arguments(tokens: dict[str, str], alice: Any, charlie: Any) -> None:
    """Arguments naming another user (no tool declares one) are refused by name and store nothing; without them the
    save is charlie's, in charlie's palace. The control: alice's own token does reach her palace."""
    naming = {"user": "alice", "userId": alice.pk, "user_id": alice.pk, "actor": "alice", "createdBy": alice.pk}
    save = {"content": "Charlie likes espresso very much.", "kind": "preference"}
    refused, result = run(_calls(tokens["charlie"], [("memory_save", {**save, **naming}), ("memory_save", save)]))
    assert refused.is_error and all(f"unknown argument {name}" in text_of(refused) for name in naming)
    assert not result.is_error, text_of(result)
    (memory,) = Memory.objects.filter(content__contains="espresso")
    assert memory.pk == result.structured_content["items"][0]["id"]
    assert (memory.palace.personal_owner_id, memory.created_by_id) == (charlie.pk, charlie.pk)
    assert memory.sources[0]["user_id"] == charlie.pk
    (own,) = run(
        _calls(tokens["alice"], [("memory_save", {"content": "Alice drinks green tea.", "kind": "preference"})])
    )
    assert not own.is_error, text_of(own)
    in_alices = Memory.objects.filter(palace__personal_owner=alice)
    assert [m.content for m in in_alices] == ["Alice drinks green tea."]  # hers reached it, charlie's did not


def test_search_labels_match_the_arms_that_ran(tokens: dict[str, str]) -> None:
    _seed(tokens["alice"])
    found = run(_calls(tokens["alice"], [("memory_search", {"query": "launch codename Bluebird"})]))[0]
    content = found.structured_content
    assert content["mode"] == "hybrid"
    assert any("sem#" in h["label"] for h in content["hits"])
    assert "mode: hybrid" in text_of(found)


def test_degraded_marker_when_the_embedder_is_down(tokens: dict[str, str], embedder_down: None) -> None:
    saved, found = run(
        _calls(
            tokens["alice"],
            [
                ("memory_save", {"content": SECRET, "kind": "fact"}),
                ("memory_search", {"query": "launch codename Bluebird"}),
            ],
        )
    )
    assert saved.structured_content["items"][0]["degraded"] == ["embedder"]
    assert "degraded: embedder" in text_of(saved)
    content = found.structured_content
    assert content["mode"] == "lexical" and content["degraded"] == ["semantic"]
    assert content["hits"] and all("sem" not in h["label"] for h in content["hits"])
    text = text_of(found)
    assert "mode: lexical" in text and "degraded: semantic" in text
    assert "hybrid" not in text


def test_assess_through_mcp_enforces_the_rules(tokens: dict[str, str]) -> None:
    first = _seed(tokens["alice"])
    # One verdict per batch: each claim gets a search of its own.
    searches = run(_calls(tokens["alice"], [("memory_search", {"query": "ops wiki checklist"})] * 4))
    second, third, fourth, fifth = (r.structured_content for r in searches)
    claims = [
        {"batchId": second["batchId"], "evidenceRefs": [first["ref"]], "adequate": True, "nextStrategy": "answer"},
        {
            "batchId": third["batchId"],
            "evidenceRefs": [third["hits"][0]["ref"]],
            "adequate": False,
            "nextStrategy": "answer",
        },
        {
            "batchId": fourth["batchId"],
            "evidenceRefs": [fourth["hits"][0]["ref"]],
            "adequate": True,
            "nextStrategy": "ask_user",
        },
        {
            "batchId": fifth["batchId"],
            "evidenceRefs": [fifth["hits"][0]["ref"]],
            "adequate": True,
            "nextStrategy": "answer",
        },
    ]
    results = run(_calls(tokens["alice"], [("memory_assess", c) for c in claims]))
    verdicts = [r.structured_content for r in results]
    assert [v["verdict"] for v in verdicts] == ["insufficient"] * 3 + ["sufficient"]
    assert verdicts[0]["rejectedRefs"][0]["ref"] == first["ref"]
    assert first["batch"] in verdicts[0]["rejectedRefs"][0]["reason"]
    assert all(v["nextStrategy"] == "retrieve" for v in verdicts[:3])
    assert OpLog.objects.filter(op="evidence.assess").count() == 4
    assert SearchBatch.objects.get(handle=second["batchId"]).assessed


def test_a_second_assess_of_one_batch_is_a_tool_error(tokens: dict[str, str]) -> None:
    seeded = _seed(tokens["alice"])
    claim = {"batchId": seeded["batch"], "evidenceRefs": [seeded["ref"]], "adequate": True, "nextStrategy": "answer"}
    first, again = run(_calls(tokens["alice"], [("memory_assess", claim), ("memory_assess", claim)]))
    assert not first.is_error and first.structured_content["verdict"] == "sufficient"  # positive control
    assert again.is_error and "already has a verdict" in text_of(again)
    assert OpLog.objects.filter(op="evidence.assess").count() == 1


def test_a_read_token_search_leaves_ranking_state_alone(tokens: dict[str, str]) -> None:
    seeded = _seed(tokens["alice"])
    before = Memory.objects.get(pk=seeded["id"])
    records = AccessRecord.objects.count()
    search = ("memory_search", {"query": "launch codename Bluebird"})

    (read,) = run(_calls(tokens["alice_read"], [search]))
    assert not read.is_error and read.structured_content["hits"][0]["id"] == seeded["id"]
    after = Memory.objects.get(pk=seeded["id"])
    assert (after.hit_count, after.last_accessed_at) == (before.hit_count, before.last_accessed_at)
    assert AccessRecord.objects.count() == records
    assert SearchBatch.objects.filter(handle=read.structured_content["batchId"]).exists()  # assess may cite it

    (write,) = run(_calls(tokens["alice"], [search]))  # positive control: a write token reinforces
    assert not write.is_error
    after = Memory.objects.get(pk=seeded["id"])
    assert after.hit_count == before.hit_count + 1 and after.last_accessed_at != before.last_accessed_at
    assert AccessRecord.objects.count() > records
