"""memory_distill through the official MCP client: the clustering runs on the Celery worker, not on the request's
thread (issue 24, Medium 5). The call answers with a job id and its state (`delivery`: inline when the worker finished
within the short wait, queued otherwise); `memory_distill job=<id>` reads it, and only for the person who started it
(anyone else gets the answer of a job that does not exist). The end-to-end tests use a real worker process; the fast
ones run the worker's side (`distill_job_run`) in the test process."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from memory.jobs import distill_job as distill_job_module
from memory.jobs import distill_job_run
from memory.models import DistillJob, Memory
from palace.models import Membership, OpLog, Palace
from palace.services import member_remove, member_set
from tests.api.mcp.conftest import call_each, call_sync, run, text_of
from tests.conftest import PROJECT_ORIGIN
from tests.fakes.memories import make_memory, topic_vectors

BOUND_S = 90  # the deadline for the worker, once it answers a ping


def _cluster(palace: Palace, *, seed: int = 7) -> list[Memory]:
    return [
        make_memory(palace, content=f"Deploys go out on Tuesdays, note {i}.", kind="decision", embedding=v)
        for i, v in enumerate(topic_vectors(3, seed=seed))
    ]


def _not_found(result: Any, job_id: int) -> str:
    assert result.is_error, text_of(result)
    return text_of(result).replace(str(job_id), "<id>")


def _poll_done(token: str, job_id: int, log: Path) -> Any:
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        result = call_sync(token, "memory_distill", {"job": job_id})
        assert not result.is_error, text_of(result)
        if result.structured_content["state"] in ("done", "failed"):
            return result
        time.sleep(0.2)
    pytest.fail(f"the worker did not finish job #{job_id}:\n{log.read_text()[-3000:]}")


@pytest.mark.slow
def test_a_real_worker_runs_memory_distill_and_only_its_starter_reads_the_job(
    tokens: dict[str, str],
    alice: Any,
    monkeypatch: pytest.MonkeyPatch,
    worker: tuple[subprocess.Popen[bytes], str, Path],
) -> None:
    _, _, log = worker
    members = _cluster(Palace.objects.get(personal_owner=alice))
    monkeypatch.setattr(distill_job_module, "INLINE_WAIT_S", 0)  # answer before the worker can: the queued path

    started = call_sync(tokens["alice"], "memory_distill", {"mode": "apply"})
    assert not started.is_error, text_of(started)
    out = started.structured_content
    assert (out["delivery"], out["mode"], out["clusters"]) == ("queued", "apply", [])
    assert out["state"] in ("queued", "running", "done") and out["llmConfigured"] in (None, False)
    job_id = out["job"]
    assert f"job={job_id}" in text_of(started)
    job = DistillJob.objects.get(pk=job_id)
    assert (job.user_id, job.mode, job.palace.personal_owner_id) == (alice.pk, "apply", alice.pk)

    done = _poll_done(tokens["alice"], job_id, log).structured_content
    assert (done["state"], done["delivery"], done["applied"], done["llmConfigured"]) == ("done", "lookup", 1, False)
    (cluster,) = done["clusters"]
    assert cluster["memberIds"] == [m.pk for m in members] and cluster["producer"] == "rules"
    # Stored state: the worker wrote the rule and superseded the members, as alice through her token.
    rule = Memory.objects.get(pk=cluster["ruleId"])
    assert rule.source_kind == "distill" and rule.created_by_id == alice.pk
    assert set(Memory.objects.filter(pk__in=cluster["memberIds"]).values_list("status", flat=True)) == {"superseded"}
    op = OpLog.objects.get(op="memory.distill", target_id=rule.pk)
    assert op.actor_user_id == alice.pk and op.actor_kind == "token" and op.actor_token_id == job.token_id
    job.refresh_from_db()
    assert job.state == "done" and job.started_at is not None and job.finished_at is not None

    # Charlie gets exactly what a job that does not exist gets; alice's lookup above is the positive control.
    theirs, missing = run(
        call_each(tokens["charlie"], [("memory_distill", {"job": job_id}), ("memory_distill", {"job": job_id + 1000})])
    )
    assert _not_found(theirs, job_id) == _not_found(missing, job_id + 1000)
    assert "not found" in text_of(theirs) and "Deploys" not in text_of(theirs) + str(theirs.structured_content)

    # With time to wait, a small run comes back in the same answer, labelled inline.
    monkeypatch.setattr(distill_job_module, "INLINE_WAIT_S", BOUND_S)
    _cluster(Palace.objects.get(personal_owner=alice), seed=11)
    inline = call_sync(tokens["alice"], "memory_distill", {"mode": "suggest"}).structured_content
    assert (inline["state"], inline["delivery"], inline["applied"]) == ("done", "inline", 0)
    assert len(inline["clusters"]) == 1 and inline["clusters"][0]["ruleId"] is None


def test_memory_distill_answers_queued_and_the_job_is_read_only_by_its_starter(
    tokens: dict[str, str], alice: Any, bob: Any, project: Palace, token_for: Any, system: Any
) -> None:
    """No worker here: the call must answer at once with the job (a request thread never clusters); the test then
    does the worker's part itself. Alice, the project's owner, may not read bob's job, nor may charlie; bob may,
    until he is no longer a member of its palace."""
    member_set(palace=project, user=bob, role=Membership.Role.EDITOR, actor=system)
    members = _cluster(project)
    bob_token = token_for(bob)
    started = call_sync(bob_token, "memory_distill", {"mode": "suggest", "project": PROJECT_ORIGIN})
    out = started.structured_content
    assert (out["state"], out["delivery"], out["clusters"], out["llmConfigured"]) == ("queued", "queued", [], None)
    job_id = out["job"]
    assert "Next: call memory_distill with job=" in text_of(started) and "Deploys" not in text_of(started)

    assert distill_job_run(job_id=job_id) is not None  # what the worker does
    assert distill_job_run(job_id=job_id) is None  # a second delivery of the task finds it claimed

    mine = call_sync(bob_token, "memory_distill", {"job": job_id})
    assert not mine.is_error, text_of(mine)
    done = mine.structured_content
    assert (done["state"], done["delivery"], done["palace"]) == ("done", "lookup", project.label)
    assert done["clusters"][0]["memberIds"] == [m.pk for m in members]
    assert "<atrium_memory_context>" in text_of(mine) and "Deploys go out on Tuesdays" in text_of(mine)
    missing = _not_found(call_sync(tokens["charlie"], "memory_distill", {"job": job_id + 1000}), job_id + 1000)
    for outsider in (tokens["alice"], tokens["charlie"]):
        assert _not_found(call_sync(outsider, "memory_distill", {"job": job_id}), job_id) == missing
    member_remove(palace=project, user=bob, actor=system)
    assert _not_found(call_sync(bob_token, "memory_distill", {"job": job_id}), job_id) == missing


def test_a_job_fails_readably_when_its_starter_lost_the_palace(
    tokens: dict[str, str], alice: Any, bob: Any, project: Palace, token_for: Any, system: Any
) -> None:
    member_set(palace=project, user=bob, role=Membership.Role.EDITOR, actor=system)
    members = _cluster(project)
    bob_token = token_for(bob)
    job_id = call_sync(bob_token, "memory_distill", {"mode": "apply", "project": PROJECT_ORIGIN}).structured_content[
        "job"
    ]
    member_set(palace=project, user=bob, role=Membership.Role.VIEWER, actor=system)  # demoted before the worker ran
    job = distill_job_run(job_id=job_id)
    assert job is not None and job.state == "failed" and "no longer one you may write" in job.error
    assert set(Memory.objects.filter(pk__in=[m.pk for m in members]).values_list("status", flat=True)) == {"active"}
    failed = call_sync(bob_token, "memory_distill", {"job": job_id})
    assert failed.structured_content["state"] == "failed" and "It failed" in text_of(failed)
    assert re.search(r"job #\d+ \(apply", text_of(failed))


def test_memory_distill_refuses_bad_job_ids_with_a_message(tokens: dict[str, str]) -> None:
    for bad in (0, -3, 2**63, "seven"):
        result = call_sync(tokens["alice"], "memory_distill", {"job": bad})
        assert result.is_error and "job" in text_of(result), (bad, text_of(result))
    assert DistillJob.objects.count() == 0
